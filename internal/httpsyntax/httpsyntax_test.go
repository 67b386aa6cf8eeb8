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

// bearerCases are BearerToken's table, and the seeds of its fuzz target.
var bearerCases = []struct {
	name, v, token string
	ok             bool
}{
	{"canonical", "Bearer abc123", "abc123", true},
	{"lower-case scheme", "bearer abc123", "abc123", true},
	{"upper-case scheme", "BEARER abc123", "abc123", true},
	{"mixed-case scheme", "bEaReR abc123", "abc123", true},
	{"several spaces", "Bearer   abc123", "abc123", true},
	{"whitespace around the value", " \tBearer abc123 \t", "abc123", true},
	{"b64token characters", "Bearer a-._~+/Z9==", "a-._~+/Z9==", true},
	{"other visible characters", "Bearer !#$%&*", "!#$%&*", true},
	{"scheme alone", "Bearer", "", false},
	{"scheme and spaces", "Bearer   ", "", false},
	{"empty", "", "", false},
	{"spaces only", "   ", "", false},
	{"tab separator", "Bearer\tabc123", "", false},
	{"no separator", "Bearerabc123", "", false},
	{"trailing junk", "Bearer abc123 junk", "", false},
	{"tab inside", "Bearer abc\t123", "", false},
	{"comma list", "Bearer abc123, Basic eA==", "", false},
	{"control character", "Bearer abc\x00123", "", false},
	{"DEL", "Bearer abc\x7f", "", false},
	{"non-ASCII token", "Bearer abc\u00e9", "", false},
	{"other scheme", "Basic abc123", "", false},
	{"longer scheme", "Bearers abc123", "", false},
	{"scheme prefix", "Bear abc123", "", false},
	{"Kelvin sign in scheme", "Bearer\u212a abc", "", false},
	{"non-ASCII scheme of the same length", "B\u00e9arer abc", "", false},
}

func TestBearerToken(t *testing.T) {
	for _, tc := range bearerCases {
		token, ok := BearerToken(tc.v)
		if token != tc.token || ok != tc.ok {
			t.Errorf("%s: BearerToken(%q) = %q, %v, want %q, %v", tc.name, tc.v, token, ok, tc.token, tc.ok)
		}
	}
}

func TestBearerTokenDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { BearerToken(" bearer  abc123 ") }); n != 0 {
		t.Errorf("BearerToken allocs = %v, want 0", n)
	}
}

// FuzzBearerToken checks that a token is returned only for a value that
// is the scheme, in any case, spaces and the token, give or take the
// whitespace around it; and that the token is visible ASCII.
func FuzzBearerToken(f *testing.F) {
	for _, tc := range bearerCases {
		f.Add(tc.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		token, ok := BearerToken(v)
		if !ok {
			if token != "" {
				t.Fatalf("BearerToken(%q) = %q, false", v, token)
			}
			return
		}
		if token == "" {
			t.Fatalf("BearerToken(%q) = empty token, true", v)
		}
		for i := 0; i < len(token); i++ {
			if token[i] <= ' ' || token[i] >= 0x7f {
				t.Fatalf("BearerToken(%q) = %q: byte %#x", v, token, token[i])
			}
		}
		trimmed := strings.Trim(v, " \t")
		if !strings.HasSuffix(trimmed, token) {
			t.Fatalf("BearerToken(%q) = %q: not the value's end", v, token)
		}
		scheme, rest, _ := strings.Cut(trimmed, " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimLeft(rest, " ") != token {
			t.Fatalf("BearerToken(%q) = %q: not scheme, spaces, token", v, token)
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
