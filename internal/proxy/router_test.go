package proxy

import (
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

func mustPattern(t testing.TB, s string) config.Pattern {
	t.Helper()
	p, err := config.ParseRoutePattern(s)
	if err != nil {
		t.Fatalf("ParseRoutePattern(%q): %v", s, err)
	}
	return p
}

var matchTests = []struct {
	pattern, path string
	match         bool
	params        map[string]string
}{
	{pattern: "/", path: "/", match: true},
	{pattern: "/", path: "/anything/at/all", match: true},
	{pattern: "/api", path: "/api", match: true},
	{pattern: "/api", path: "/api/", match: false},
	{pattern: "/api", path: "/apix", match: false},
	{pattern: "/api", path: "/", match: false},
	{pattern: "/api/", path: "/api/", match: true},
	{pattern: "/api/", path: "/api", match: false},
	{pattern: "/api/", path: "/api/x", match: false},
	{pattern: "/api/search/{type}", path: "/api/search/image", match: true, params: map[string]string{"type": "image"}},
	{pattern: "/api/search/{type}", path: "/api/search/", match: false},
	{pattern: "/api/search/{type}", path: "/api/search", match: false},
	{pattern: "/api/search/{type}", path: "/api/search/image/extra", match: false},
	{pattern: "/api/search/{type}/", path: "/api/search/audio/", match: true, params: map[string]string{"type": "audio"}},
	{pattern: "/api/{type}/related/{id}", path: "/api/image/related/4bc43a04-ef46-4544-a0c1-63c63f56e276", match: true,
		params: map[string]string{"type": "image", "id": "4bc43a04-ef46-4544-a0c1-63c63f56e276"}},
	{pattern: "/static/{rest...}", path: "/static/css/site.css", match: true, params: map[string]string{"rest": "css/site.css"}},
	{pattern: "/static/{rest...}", path: "/static/", match: false},
	{pattern: "/static/{rest...}", path: "/static", match: false},
	{pattern: "/a/{x}/b", path: "/a//b", match: false},
	{pattern: "/a/{x}", path: "/a/%2F", match: true, params: map[string]string{"x": "%2F"}},
}

func TestMatch(t *testing.T) {
	for _, tc := range matchTests {
		var p Params
		got := Match(mustPattern(t, tc.pattern), tc.path, &p)
		if got != tc.match {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.match)
			continue
		}
		for k, want := range tc.params {
			if v := p.Get(k); v != want {
				t.Errorf("Match(%q, %q): param %s = %q, want %q", tc.pattern, tc.path, k, v, want)
			}
		}
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	pt := mustPattern(t, "/api/{type}/related/{id}")
	var p Params
	if n := testing.AllocsPerRun(1000, func() { Match(pt, "/api/image/related/abc", &p) }); n != 0 {
		t.Errorf("Match allocs = %v, want 0", n)
	}
}

func TestRouterFirstMatchWinsAndMethods(t *testing.T) {
	rt := Router{Routes: []*Route{
		{Name: "post-only", Pattern: mustPattern(t, "/api/{x}"), Methods: []string{"POST"}},
		{Name: "api", Pattern: mustPattern(t, "/api/{x}")},
		{Name: "all", Pattern: mustPattern(t, "/")},
	}}
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/api/a", "post-only"},
		{"GET", "/api/a", "api"},
		{"GET", "/other", "all"},
	} {
		var p Params
		if r := rt.Match(tc.method, tc.path, &p); r == nil || r.Name != tc.want {
			t.Errorf("Match(%s %s) = %v, want %s", tc.method, tc.path, r, tc.want)
		}
	}
	var p Params
	if r := (&Router{}).Match("GET", "/", &p); r != nil {
		t.Errorf("empty router matched %s", r.Name)
	}
}

func TestExpand(t *testing.T) {
	pt := mustPattern(t, "/api/{type}/related/{id}")
	tmpl, err := config.ParseRewrite("/v1/{type}s/{id}/related/", pt)
	if err != nil {
		t.Fatal(err)
	}
	var p Params
	if !Match(pt, "/api/image/related/42", &p) {
		t.Fatal("no match")
	}
	if got, want := (&Route{Rewrite: tmpl}).Expand(&p), "/v1/images/42/related/"; got != want {
		t.Errorf("Expand = %q, want %q", got, want)
	}
}

func TestManyParams(t *testing.T) {
	var b strings.Builder
	var path strings.Builder
	for i := range 12 {
		b.WriteString("/{p" + string(rune('a'+i)) + "}")
		path.WriteString("/" + string(rune('A'+i)))
	}
	var p Params
	if !Match(mustPattern(t, b.String()), path.String(), &p) {
		t.Fatal("no match")
	}
	if got := p.Get("pl"); got != "L" {
		t.Errorf("12th param = %q, want L", got)
	}
}

// FuzzMatch: any path against the table's patterns never panics, a
// match's parameters are substrings of the path, and a path a pattern
// matches has the number of slashes Pattern.Slashes says (Router.Match
// skips the others).
func FuzzMatch(f *testing.F) {
	for _, tc := range matchTests {
		f.Add(tc.pattern, tc.path)
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		pt, err := config.ParseRoutePattern(pattern)
		if err != nil || !strings.HasPrefix(path, "/") {
			return
		}
		var p Params
		if !Match(pt, path, &p) {
			return
		}
		if n := pt.Slashes(); n >= 0 && strings.Count(path, "/") != n {
			t.Errorf("Match(%q, %q) is true, yet the path has %d slashes and Slashes says %d: the router would skip it",
				pattern, path, strings.Count(path, "/"), n)
		}
		for _, name := range pt.Params() {
			if v := p.Get(name); !strings.Contains(path, v) {
				t.Errorf("Match(%q, %q): param %s = %q is not in the path", pattern, path, name, v)
			}
		}
	})
}

// TestRouteValues: a parameter with a value mapping matches only its
// values, and the rewrite writes the mapped value.
func TestRouteValues(t *testing.T) {
	rt := Router{Routes: []*Route{{
		Name: "search", Pattern: mustPattern(t, "/api/search/{type}/"),
		Rewrite: config.Template{Parts: []config.TemplatePart{{Literal: "/v1/"}, {Param: "type"}, {Literal: "/"}}},
		Values:  map[string]map[string]string{"type": {"image": "images", "audio": "audio"}},
	}}}
	for path, want := range map[string]string{
		"/api/search/image/": "/v1/images/", "/api/search/audio/": "/v1/audio/",
		"/api/search/video/": "", "/api/search/images/": "", "/api/search/IMAGE/": "", "/api/search/../": "",
	} {
		var p Params
		r := rt.Match("GET", path, &p)
		switch {
		case want == "" && r != nil:
			t.Errorf("%s matched, want no match", path)
		case want != "" && r == nil:
			t.Errorf("%s did not match", path)
		case want != "" && r.Expand(&p) != want:
			t.Errorf("%s rewrote to %q, want %q", path, r.Expand(&p), want)
		}
	}
}

// The router's shortcut (Pattern.Slashes) skips no pattern that matches:
// every table case, through a one-route router, as Match says.
func TestRouterSlashesShortcut(t *testing.T) {
	for _, tc := range matchTests {
		pt := mustPattern(t, tc.pattern)
		rt := Router{Routes: []*Route{{Name: "r", Pattern: pt}}}
		var p, q Params
		if got, want := rt.Match("GET", tc.path, &p) != nil, Match(pt, tc.path, &q); got != want || got != tc.match {
			t.Errorf("%q against %q: router %v, Match %v, want %v", tc.path, tc.pattern, got, want, tc.match)
		}
	}
}

// BenchmarkRouterMatch: MaveDB's routes (four CSV routes, then "/"), for
// the API path bench/gateway.sh sends.
func BenchmarkRouterMatch(b *testing.B) {
	var rt Router
	for _, path := range []string{"/api/v1/score-sets/{urn}/scores", "/api/v1/score-sets/{urn}/counts",
		"/api/v1/score-sets/{urn}/variants/data", "/api/v1/score-sets/{urn}/mapped-variants", "/"} {
		pt, err := config.ParseRoutePattern(path)
		if err != nil {
			b.Fatal(err)
		}
		rt.Routes = append(rt.Routes, &Route{Name: path, Pattern: pt})
	}
	b.ReportAllocs()
	var p Params
	for b.Loop() {
		if r := rt.Match("GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1", &p); r == nil || r.Name != "/" {
			b.Fatal("wrong route")
		}
	}
}
