package httpsyntax

import (
	"go/build"
	"strings"
	"testing"
)

func TestIsToken(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"X-Api-Key", true}, {"ovSession", true}, {"GET", true}, {"!#$%&'*+-.^_`|~09azAZ", true},
		{"", false}, {"a b", false}, {"a:b", false}, {"a\x00", false}, {"ä", false}, {`"q"`, false},
		{"a/b", false}, {"(x)", false}, {"a,b", false}, {"a=b", false}, {"a;b", false},
	} {
		if got := IsToken(tc.s); got != tc.want {
			t.Errorf("IsToken(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func FuzzIsToken(f *testing.F) {
	for _, s := range []string{"X-Api-Key", "", "a b", "ä"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if IsToken(s) {
			for i := 0; i < len(s); i++ {
				if s[i] <= ' ' || s[i] >= 0x7f {
					t.Fatalf("IsToken(%q) accepts byte %#x", s, s[i])
				}
			}
		}
	})
}

// TestImports keeps the package on the standard library: respond and
// clientip, which the public packages use, import it.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("package httpsyntax imports %s; it may import the standard library only", imp)
		}
	}
}
