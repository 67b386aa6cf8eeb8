package proxy

import (
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

const fenceUUID = "4bc43a04-ef46-4544-a0c1-63c63f56e276"

// optionalTests: trailing_slash: optional takes a path with or without the
// slash after the last segment, and nothing more.
var optionalTests = []struct {
	pattern, path string
	match         bool
}{
	{"/api/{type}/{id}", "/api/image/" + fenceUUID, true},
	{"/api/{type}/{id}", "/api/image/" + fenceUUID + "/", true},
	{"/api/{type}/{id}", "/api/image/" + fenceUUID + "//", false},
	{"/api/{type}/{id}", "/api/image/" + fenceUUID + "/x", false},
	{"/api/{type}/{id}", "/api/image/", false},
	{"/api/{type}/{id}", "/api/image//", false},
	{"/api/{type}/{id}", "/api/image", false},
	{"/api/search/{type}/", "/api/search/image/", true},
	{"/api/search/{type}/", "/api/search/image", true},
	{"/api/search/{type}/", "/api/search/", false},
	{"/api/search/{type}/", "/api/search/image/.", false},
	{"/api/{type}/related/{id}", "/api/audio/related/" + fenceUUID + "/", true},
	{"/api/{type}/related/{id}", "/api/audio/related/" + fenceUUID + "%2F", true}, // a cleaned path keeps no %2F; as a segment it is one
	{"/api/{type}/related/{id}", "/api/audio/related/" + fenceUUID + "/related/", false},
	{"/api", "/api/", true},
	{"/api", "/api", true},
	{"/api", "/apix/", false},
}

func TestMatchOptionalSlash(t *testing.T) {
	for _, tc := range optionalTests {
		pt := mustPattern(t, tc.pattern)
		pt.OptionalSlash = true
		var p Params
		if got := Match(pt, tc.path, &p); got != tc.match {
			t.Errorf("Match(%q optional, %q) = %v, want %v", tc.pattern, tc.path, got, tc.match)
		}
	}
}

// fenceRouter is the Openverse shape: API routes in group api, fenced at
// /api/, before the frontend's catch-all.
func fenceRouter(t testing.TB) *Router {
	rt := &Router{Fences: []Fence{{Group: "api", Prefix: []string{"api"}}, {Group: "v2", Prefix: []string{"api", "v2"}}}}
	for i, r := range []struct{ name, group, path string }{
		{"api-search", "api", "/api/search/{type}/"},
		{"api-related", "api", "/api/{type}/related/{id}"},
		{"api-single", "api", "/api/{type}/{id}"},
		{"v2", "v2", "/api/v2/{rest...}"},
		{"pages", "pages", "/"},
	} {
		pt := mustPattern(t, r.path)
		pt.OptionalSlash = r.group == "api"
		route := &Route{Index: i, Name: r.name, Group: r.group, Pattern: pt}
		if r.group == "api" {
			route.Values = map[string]map[string]string{"type": {"image": "images", "audio": "audio"}}
			if strings.Contains(r.path, "{id}") {
				route.Constraints = map[string]func(string) bool{"id": func(s string) bool { return len(s) == len(fenceUUID) }}
			}
		}
		rt.Routes = append(rt.Routes, route)
	}
	return rt
}

// routeTests: what the fenced router does with client paths, hostile
// ones included. The gateway decodes and cleans a path before routing
// (dot segments, "//"); the raw forms are here too, to show the router
// keeps them under the fence all the same.
var routeTests = []struct {
	path  string
	route string // "" for none: the gateway's 404
}{
	{"/api/search/image/", "api-search"},
	{"/api/search/image", "api-search"},
	{"/api/search/video/", ""},
	{"/api/search/video", ""},
	{"/api/search/", ""},
	{"/api/search", ""},
	{"/api/", ""},
	{"/api", ""},
	{"/API/search/video/", ""},
	{"/Api/image/" + fenceUUID, ""}, // fenced, and the routes' literals are exact
	{"/api/image/" + fenceUUID, "api-single"},
	{"/api/image/" + fenceUUID + "/", "api-single"},
	{"/api/image/" + fenceUUID + "//", ""},
	{"/api/image/" + fenceUUID + "/x", ""},
	{"/api/image/not-a-uuid", ""},
	{"/api/image/related/" + fenceUUID, "api-related"},
	{"/api/image/related/" + fenceUUID + "/", "api-related"},
	{"/api/video/related/" + fenceUUID + "/", ""},
	{"/api/image/%2F..%2F..%2Fadmin", ""},
	{"/api/%2e%2e/v1/images/", ""},
	{"/api/../v1/", ""},
	{"/api/./search/image/", ""},
	{"/api//search/image/", ""},
	{"/api%2Fsearch%2Fvideo/", "pages"}, // one segment "api%2Fsearch%2Fvideo": decoded, the gateway sees /api/search/video/
	{"/api;x/search/video/", "pages"},
	{"/apis/search/video/", "pages"},
	{"/api-docs", "pages"},
	{"/search/image/", "pages"},
	{"/", "pages"},
	{"/api/v2/x", "v2"},
	{"/api/v2", ""}, // the longer fence: v2's, whose route needs a rest
	{"/API/V2/x", ""},
	{"/api/" + strings.Repeat("a/", 4000), ""},
	{"/api/search/" + strings.Repeat("image", 2000) + "/", ""},
}

func TestRouterFences(t *testing.T) {
	rt := fenceRouter(t)
	for _, tc := range routeTests {
		var p Params
		got := ""
		if r := rt.Match("GET", tc.path, &p); r != nil {
			got = r.Name
		}
		if got != tc.route {
			t.Errorf("Match(GET, %.80q) = %q, want %q", tc.path, got, tc.route)
		}
	}
}

func TestFencedDoesNotAllocate(t *testing.T) {
	rt := fenceRouter(t)
	var p Params
	if n := testing.AllocsPerRun(1000, func() { rt.Match("GET", "/api/search/video/", &p) }); n != 0 {
		t.Errorf("Match allocs = %v, want 0", n)
	}
}

// FuzzRouterFences: no path under a fence is matched by a route of
// another group, and an optional-slash route takes a path with and
// without its final slash alike, with the same parameters.
func FuzzRouterFences(f *testing.F) {
	for _, tc := range routeTests {
		f.Add(tc.path)
	}
	for _, tc := range optionalTests {
		f.Add(tc.path)
	}
	rt := fenceRouter(f)
	f.Fuzz(func(t *testing.T, path string) {
		if !strings.HasPrefix(path, "/") {
			return
		}
		var p Params
		r := rt.Match("GET", path, &p)
		if fence, ok := rt.Fenced(path); ok && r != nil && r.Group != fence.Group {
			t.Fatalf("Match(%q) = %s of group %s, under group %s's fence", path, r.Name, r.Group, fence.Group)
		}
		if r == nil || !r.Pattern.OptionalSlash || strings.HasSuffix(path, "/") {
			return
		}
		want := r.Expand(&p)
		var p2 Params
		r2 := rt.Match("GET", path+"/", &p2)
		if r2 != r || r2.Expand(&p2) != want {
			t.Fatalf("Match(%q) = %s, but Match(%q) = %v", path, r.Name, path+"/", r2)
		}
	})
}

// TestParsePrefixFeedsTheFence: the configuration's prefixes, as the
// gateway turns them into fences.
func TestParsePrefixFeedsTheFence(t *testing.T) {
	for _, s := range []string{"/api/", "/api"} {
		segs, err := config.ParsePrefix(s)
		if err != nil || len(segs) != 1 || segs[0] != "api" {
			t.Errorf("ParsePrefix(%q) = %q, %v, want [api]", s, segs, err)
		}
	}
	for _, bad := range []string{"", "/", "api/", "/api/{type}/", "/api//x", "/api/../x", "/api/%2e", "/a pi/"} {
		if segs, err := config.ParsePrefix(bad); err == nil {
			t.Errorf("ParsePrefix(%q) = %q, want an error", bad, segs)
		}
	}
}
