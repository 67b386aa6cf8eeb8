package cli

import (
	"strings"
	"testing"
)

// TestExplainOpenverseRoutes: explain says that a path under /api/ which
// no API route takes is floodgate's 404 (the api group's fence), and that
// a trailing slash leads to the same API path as none.
func TestExplainOpenverseRoutes(t *testing.T) {
	const id = "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/api/search/video/", []string{"verdict: 404: under /api/ (route group api), no route of the group matches"}},
		{"/API/image/" + id, []string{"verdict: 404: under /api/ (route group api)"}},
		{"/api/image/" + id, []string{"route: api-single", "upstream path: /v1/images/" + id + "/\n", "verdict: forward to upstream api"}},
		{"/api/image/" + id + "/", []string{"route: api-single", "upstream path: /v1/images/" + id + "/\n", "verdict: forward to upstream api"}},
		{"/api/audio/related/" + id + "/", []string{"route: api-related", "upstream path: /v1/audio/" + id + "/related/\n"}},
	} {
		code, stdout, stderr := run(t, nil, "explain", "--config", "../../examples/openverse.yaml", "--env", "development", "GET", tc.path)
		if code != 0 {
			t.Fatalf("explain %s: exit %d: %s", tc.path, code, stderr)
		}
		for _, want := range tc.want {
			if !strings.Contains(stdout, want) {
				t.Errorf("explain %s lacks %q:\n%s", tc.path, want, stdout)
			}
		}
	}
}

// TestValidateShowsRouteSettings: validate prints the optional trailing
// slashes and the api group's fence of examples/openverse.yaml.
func TestValidateShowsRouteSettings(t *testing.T) {
	code, stdout, stderr := run(t, nil, "validate", "--config", "../../examples/openverse.yaml", "--env", "development")
	if code != 0 {
		t.Fatalf("validate: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"api-single   GET,HEAD /api/{type}/{id} -> api /v1/{type}/{id}/ (trailing slash optional)",
		"under /api/: group api's routes only; 404 when none matches",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate lacks %q:\n%s", want, stdout)
		}
	}
}
