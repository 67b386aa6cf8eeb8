package forward

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package on the standard library (and
// internal/rawio, which is on it too): it sits under the gateway's hot
// path, and internal/proxy may import it.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "github.com/floodgate/floodgate/internal/rawio" {
			continue
		}
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("package forward imports %s; it may import the standard library only", imp)
		}
	}
}
