package gateway

import (
	"path"
	"strings"
	"testing"
)

var cleanTests = []struct{ in, want string }{
	{"", "/"},
	{"/", "/"},
	{"/a/b", "/a/b"},
	{"/a/b/", "/a/b/"},
	{"a/b", "/a/b"},
	{"//a", "/a"},
	{"/a//b", "/a/b"},
	{"/a/./b", "/a/b"},
	{"/a/../b", "/b"},
	{"/../../etc/passwd", "/etc/passwd"},
	{"/a/b/..", "/a"},
	{"/a/b/.", "/a/b"},
	{"/a/b/../", "/a/"},
	{"/.", "/"},
	{"/..", "/"},
	{"/a/...", "/a/..."},
	{"/a/..b", "/a/..b"},
	{"/a/.b/", "/a/.b/"},
	{"///", "/"},
}

func TestCleanPath(t *testing.T) {
	for _, tc := range cleanTests {
		if got := cleanPath(tc.in); got != tc.want {
			t.Errorf("cleanPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCleanPathDoesNotAllocateWhenClean(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { cleanPath("/api/v1/score-sets/urn:mavedb:1/scores") }); n != 0 {
		t.Errorf("cleanPath allocs = %v, want 0", n)
	}
}

// FuzzCleanPath: the result is absolute, has no dot segments or doubled
// slashes, and is stable.
func FuzzCleanPath(f *testing.F) {
	for _, tc := range cleanTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c := cleanPath(p)
		if !strings.HasPrefix(c, "/") {
			t.Fatalf("cleanPath(%q) = %q: not absolute", p, c)
		}
		if needsClean(c) {
			t.Fatalf("cleanPath(%q) = %q: not clean", p, c)
		}
		if cleanPath(c) != c {
			t.Fatalf("cleanPath(%q) = %q: not stable", p, c)
		}
		if strings.TrimSuffix(c, "/") != strings.TrimSuffix(path.Clean("/"+p), "/") && c != "/" {
			t.Fatalf("cleanPath(%q) = %q, path.Clean gives %q", p, c, path.Clean("/"+p))
		}
	})
}
