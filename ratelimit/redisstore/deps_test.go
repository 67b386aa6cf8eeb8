package redisstore_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyRedisClientUser checks that no package of the module but this
// one imports a Redis client (tests and the benchmark programs under
// bench/ may, for peer baselines).
func TestOnlyRedisClientUser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/floodgate/floodgate/...").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == "github.com/floodgate/floodgate/ratelimit/redisstore" || strings.HasPrefix(pkg, "github.com/floodgate/floodgate/bench/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, "github.com/redis/") || strings.HasPrefix(imp, "github.com/go-redis/") {
				t.Errorf("%s imports %s: only ratelimit/redisstore may import a Redis client", pkg, imp)
			}
		}
	}
}
