package httplimit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/floodgate/floodgate"

// forbidden are packages that no public package may pull in, whatever else
// it is allowed: the gateway's configuration, rules and metrics, and the
// heavy modules behind them.
var forbidden = []string{
	module + "/internal/telemetry",
	module + "/internal/rules",
	module + "/internal/config",
	module + "/internal/gateway",
	module + "/internal/cli",
	"github.com/prometheus/",
	"cel.dev/",
	"github.com/google/cel-go",
	"go.yaml.in/",
	"gopkg.in/yaml",
}

// TestDependencies checks, with go list -deps, that importing the public
// packages drags in nothing but the standard library: httplimit, ratelimit
// and ratelimit/memory import only the standard library and this module's
// standard-library-only packages (internal/clientip and internal/respond
// included); ratelimit/redisstore, when present, may import the ratelimit
// packages, internal/rawio (raw socket I/O, standard library only) and its
// Redis client, but none of the forbidden packages.
func TestDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	stdlibOnly := []string{module + "/httplimit", module + "/ratelimit", module + "/ratelimit/memory"}
	for _, pkg := range stdlibOnly {
		for _, dep := range deps(t, pkg) {
			if !strings.HasPrefix(dep, module+"/") {
				t.Errorf("%s imports %s, which is neither in the standard library nor in this module", pkg, dep)
			}
			if bad := forbiddenPrefix(dep); bad != "" {
				t.Errorf("%s imports %s (forbidden: %s)", pkg, dep, bad)
			}
		}
	}
	if _, err := os.Stat(filepath.Join("..", "ratelimit", "redisstore")); err == nil {
		pkg := module + "/ratelimit/redisstore"
		for _, dep := range deps(t, pkg) {
			if strings.HasPrefix(dep, module+"/") && !strings.HasPrefix(dep, module+"/ratelimit") && dep != module+"/internal/rawio" {
				t.Errorf("%s imports %s: the Redis store may import the ratelimit packages, internal/rawio and its Redis client only", pkg, dep)
			}
			if bad := forbiddenPrefix(dep); bad != "" {
				t.Errorf("%s imports %s (forbidden: %s)", pkg, dep, bad)
			}
		}
	}
}

// deps returns the packages outside the standard library that pkg imports,
// directly or not (pkg itself included).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}

func forbiddenPrefix(dep string) string {
	for _, f := range forbidden {
		if dep == f || strings.HasPrefix(dep, f) && (strings.HasSuffix(f, "/") || strings.HasPrefix(dep, f+"/")) {
			return f
		}
	}
	return ""
}

// TestForbiddenPrefix checks the matcher the dependency test relies on.
func TestForbiddenPrefix(t *testing.T) {
	for dep, want := range map[string]string{
		module + "/internal/telemetry":                   module + "/internal/telemetry",
		module + "/internal/telemetry/sub":               module + "/internal/telemetry",
		module + "/internal/telemetryx":                  "",
		module + "/internal/respond":                     "",
		"github.com/prometheus/client_golang/prometheus": "github.com/prometheus/",
		"cel.dev/expr":                                   "cel.dev/",
		"github.com/redis/rueidis":                       "",
	} {
		if got := forbiddenPrefix(dep); got != want {
			t.Errorf("forbiddenPrefix(%q) = %q, want %q", dep, got, want)
		}
	}
}
