package ratelimit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly checks that the public packages that
// applications embed import nothing outside the standard library and this
// module's ratelimit packages.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		"github.com/floodgate/floodgate/ratelimit", "github.com/floodgate/floodgate/ratelimit/memory").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/floodgate/floodgate/ratelimit":        true,
		"github.com/floodgate/floodgate/ratelimit/memory": true,
	}
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			t.Errorf("ratelimit or ratelimit/memory imports %s, which is not in the standard library", p)
		}
	}
}
