package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/admin"
)

// rawGet sends path exactly as written (no client-side cleaning) to base's
// listener and returns the status, the Content-Type and the body.
func rawGet(t *testing.T, addr, path string, hdr ...string) (int, string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var extra strings.Builder
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&extra, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: openverse.test\r\nX-Forwarded-For: 203.0.113.50\r\n%sConnection: close\r\n\r\n", path, extra.String())
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %.80s: %v", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func (f *frontendRecorder) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

// TestOpenverseNothingUnderAPIReachesTheFrontend: a path under /api/ that
// no API route takes is answered by floodgate's own 404 problem, never
// forwarded to the frontend as a page load (it used to be: 200 and a
// page), whatever encoding, dot segments, doubled slashes, case or length
// it comes in. Paths beside /api/ still reach the frontend.
func TestOpenverseNothingUnderAPIReachesTheFrontend(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	addr := h.public.Listener.Addr().String()
	id := "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	for _, path := range []string{
		"/api/search/video/",
		"/api/search/video/?q=cat",
		"/api/search/video",
		"/api/search/",
		"/api/search",
		"/api/",
		"/api",
		"/api/image/not-a-uuid",
		"/api/image/not-a-uuid/",
		"/api/image/" + id + "/extra",
		"/api/video/" + id,
		"/api/image/related/" + id + "/more/",
		"/API/search/video/",
		"/Api/image/" + id,
		"/api%2Fsearch%2Fvideo%2F",
		"/api/search%2Fvideo%2F",
		"/%61pi/search/video/",
		"/api/search/%2e/video/",
		"/x/../api/search/video/",
		"/./api/search/video/",
		"//api/search/video/",
		"/api//search//video//",
		"/api/search/../../api/foo",
		"/api/" + strings.Repeat("a", 6000),
		"/api/" + strings.Repeat("x/", 2000),
	} {
		for _, accept := range []string{"", "application/json"} {
			code, ctype, body := rawGet(t, addr, path, "Accept", accept)
			if code != http.StatusNotFound || !strings.HasPrefix(ctype, "application/problem+json") || !strings.Contains(body, `"status":404`) {
				t.Errorf("GET %.80s (Accept %q): %d %s %.100s, want floodgate's 404 problem", path, accept, code, ctype, body)
			}
		}
	}
	if got := h.front.all(); len(got) != 0 {
		t.Errorf("paths under /api/ reached the frontend: %.300q", got)
	}
	if got := h.api.all(); len(got) != 0 {
		t.Errorf("paths no API route takes reached the API: %v", got)
	}
	// Beside the fence, the frontend serves as before; dot segments are
	// resolved before routing, so /api/../x is /x.
	for _, path := range []string{"/", "/search/image/?q=cat", "/apis/x", "/api-docs", "/image/" + id, "/api/%2e%2e/search/video/"} {
		if code, _, _ := rawGet(t, addr, path, "Accept", "text/html"); code != 200 {
			t.Errorf("GET %s: %d, want the frontend's 200", path, code)
		}
	}
	want := []string{"/", "/search/image/", "/apis/x", "/api-docs", "/image/" + id, "/search/video/"}
	if got := h.front.all(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the frontend received %q, want %q", got, want)
	}
}

// TestOpenverseTrailingSlashOptional: the single, related and search
// routes take their path with and without the trailing slash, as Nuxt's
// router does, and send both to the same API path.
func TestOpenverseTrailingSlashOptional(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	addr := h.public.Listener.Addr().String()
	id := "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	for _, tc := range []struct {
		paths []string
		api   string
	}{
		{[]string{"/api/image/" + id, "/api/image/" + id + "/", "/api/image/" + id + "%2F", "/api/image//" + id + "/", "/api/image/" + id + "//"}, "/v1/images/" + id + "/"},
		{[]string{"/api/audio/related/" + id, "/api/audio/related/" + id + "/"}, "/v1/audio/" + id + "/related/"},
		{[]string{"/api/search/image/?q=cat", "/api/search/image?q=cat"}, "/v1/images/"},
	} {
		for _, path := range tc.paths {
			before := len(h.api.all())
			code, _, body := rawGet(t, addr, path, "Accept", "application/json")
			reqs := h.api.all()
			if code != 200 || len(reqs) != before+1 {
				t.Errorf("GET %s: %d %.100s, %d API requests; want 200 from the API", path, code, body, len(reqs)-before)
				continue
			}
			if got := reqs[len(reqs)-1].path; got != tc.api {
				t.Errorf("GET %s reached the API as %s, want %s", path, got, tc.api)
			}
		}
	}
	if got := h.front.all(); len(got) != 0 {
		t.Errorf("API paths reached the frontend: %q", got)
	}
}

// TestOpenverseExplainShowsTheFence: explain names the fence of a path
// no API route takes, and the API path a trailing slash leads to.
func TestOpenverseExplainShowsTheFence(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	id := "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	explain := func(path string) (route, fence, upstream, verdict, text string) {
		req, err := admin.ExplainRequest{Method: "GET", Path: path}.Build()
		if err != nil {
			t.Fatal(err)
		}
		ex := h.srv.Current().Explain(t.Context(), req)
		var b strings.Builder
		ex.WriteText(&b)
		return ex.Route, ex.Fence, ex.UpstreamPath, ex.Verdict, b.String()
	}
	route, fence, _, verdict, text := explain("/api/search/video/")
	if route != "" || fence != "api" || verdict != "404: under /api/ (route group api), no route of the group matches" {
		t.Errorf("explain /api/search/video/: route %q fence %q verdict %q", route, fence, verdict)
	}
	if !strings.Contains(text, "verdict: 404: under /api/ (route group api)") {
		t.Errorf("explain text:\n%s", text)
	}
	// The query as serve filters it: a page_size over its cap is the
	// 400 serve answers, not a forward.
	if _, _, _, verdict, _ := explain("/api/search/image/?q=cat&page_size=500"); !strings.HasPrefix(verdict, "400: query parameter page_size") {
		t.Errorf("explain of page_size=500: verdict %q, want serve's 400", verdict)
	}
	for _, path := range []string{"/api/image/" + id, "/api/image/" + id + "/"} {
		route, fence, upstream, _, text := explain(path)
		if route != "api-single" || fence != "api" || upstream != "/v1/images/"+id+"/" {
			t.Errorf("explain %s: route %q fence %q upstream %q", path, route, fence, upstream)
		}
		if !strings.Contains(text, "upstream path: /v1/images/"+id+"/\n") {
			t.Errorf("explain %s text:\n%s", path, text)
		}
	}
}
