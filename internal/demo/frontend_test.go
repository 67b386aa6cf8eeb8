package demo

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func newFrontend(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(Frontend())
	t.Cleanup(s.Close)
	return s
}

// fetch sends method path to s and returns the response and its body.
func fetch(t *testing.T, s *httptest.Server, method, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp, string(body)
}

var nonceAttr = regexp.MustCompile(`<script nonce="([^"]+)">`)

func TestFrontendPage(t *testing.T) {
	s := newFrontend(t)
	resp, body := fetch(t, s, http.MethodGet, "/")
	if resp.StatusCode != 200 {
		t.Fatalf("GET / = %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	for _, want := range []string{
		`<html lang="en">`,
		`<form role="search"`,
		`<label for="q">`,
		`<input type="search" id="q" name="q" value=""`,
		`<legend>Media type</legend>`,
		`value="image" checked>`,
		`aria-live="polite"`,
		`role="alert"`,
		`fetch('/api/search/' + type + '/?q=' + encodeURIComponent(q) + '&page_size=20'`,
		`'Retry-After'`,
		`You are searching too fast. `,
		`res.status === 403`,
		`res.status === 503`,
		`Could not reach the server.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("GET / page lacks %q", want)
		}
	}
	// Nothing but itself: no external resources or links to follow.
	for _, unwanted := range []string{"http://", "https://", "//cdn", "src=\"http", "innerHTML"} {
		if strings.Contains(body, unwanted) {
			t.Errorf("GET / page contains %q", unwanted)
		}
	}

	m := nonceAttr.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no <script nonce=…> in the page")
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'nonce-" + m[1] + "'", "connect-src 'self'", "img-src data:"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	_, again := fetch(t, s, http.MethodGet, "/")
	if m2 := nonceAttr.FindStringSubmatch(again); m2 == nil || m2[1] == m[1] {
		t.Errorf("two answers have the nonces %q and %q, want different ones", m[1], m2)
	}
}

func TestFrontendCookie(t *testing.T) {
	s := newFrontend(t)
	resp, _ := fetch(t, s, http.MethodGet, "/")
	if got := resp.Header.Values("Set-Cookie"); len(got) != 1 || got[0] != "ov_theme=light; Path=/; SameSite=Lax" {
		t.Errorf("GET / Set-Cookie = %q, want [ov_theme=light; Path=/; SameSite=Lax]", got)
	}
	for _, p := range []string{"/search?q=cat", "/favicon.ico", "/missing"} {
		if resp, _ := fetch(t, s, http.MethodGet, p); len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Errorf("GET %s sets cookies %q, want none", p, resp.Header.Values("Set-Cookie"))
		}
	}
}

func TestFrontendSearchPrefill(t *testing.T) {
	s := newFrontend(t)
	tests := []struct {
		path      string
		want      []string
		forbidden []string
	}{
		{
			path: "/search?q=cat&type=image",
			want: []string{`value="cat"`, `value="image" checked>`, `<title>cat – Media search`},
		},
		{
			path: "/search?q=owl&type=audio",
			want: []string{`value="owl"`, `value="audio" checked>`},
		},
		{
			path: "/search?q=owl&type=video",
			want: []string{`value="image" checked>`},
		},
		{
			path:      "/search?q=%3Cscript%3Ealert(1)%3C/script%3E",
			want:      []string{`value="&lt;script&gt;alert(1)&lt;/script&gt;"`, `<title>&lt;script&gt;alert(1)&lt;/script&gt; – `},
			forbidden: []string{`<script>alert(1)`},
		},
		{
			path:      `/search?q=%22+autofocus+onfocus=%22alert(1)`,
			want:      []string{`value="&#34; autofocus onfocus=&#34;alert(1)"`},
			forbidden: []string{`" autofocus`},
		},
		{
			path:      "/search?q=%3C/title%3E%3Cimg+src=x%3E",
			forbidden: []string{`<img src=x>`, `</title><img`},
		},
	}
	for _, tt := range tests {
		resp, body := fetch(t, s, http.MethodGet, tt.path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200", tt.path, resp.StatusCode)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %q", tt.path, w)
			}
		}
		for _, f := range tt.forbidden {
			if strings.Contains(body, f) {
				t.Errorf("GET %s contains %q", tt.path, f)
			}
		}
	}
}

func TestFrontendOtherPaths(t *testing.T) {
	s := newFrontend(t)
	tests := []struct {
		method, path string
		want         int
		html         bool
	}{
		{"GET", "/favicon.ico", 204, false},
		{"HEAD", "/", 200, false},
		{"GET", "/nope", 404, true},
		{"GET", "/search/", 404, true},
		{"GET", "/api/search/image/?q=cat", 404, true}, // the gateway's, not the frontend's
		{"GET", "/%2e%2e/etc/passwd", 404, true},
		{"GET", "/" + strings.Repeat("x", 10_000), 404, true},
		{"POST", "/", 405, false},
		{"DELETE", "/search", 405, false},
		{"POST", "/favicon.ico", 405, false},
	}
	for _, tt := range tests {
		resp, body := fetch(t, s, tt.method, tt.path)
		if resp.StatusCode != tt.want {
			t.Errorf("%s %.40s = %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		}
		if tt.html && (!strings.Contains(body, `<html lang="en">`) || !strings.Contains(body, "<h1>Page not found</h1>")) {
			t.Errorf("%s %.40s: not the 404 page: %.200q", tt.method, tt.path, body)
		}
	}
}

// TestFrontendHostileQueries renders the page for the API's hostile
// queries: always 200 HTML, never a 5xx.
func TestFrontendHostileQueries(t *testing.T) {
	s := newFrontend(t)
	for _, tt := range hostile {
		resp, body := fetch(t, s, http.MethodGet, "/search?"+tt.query)
		if resp.StatusCode != 200 || !strings.Contains(body, `role="search"`) {
			t.Errorf("GET /search?%.60s = %d, want 200 with the page", tt.query, resp.StatusCode)
		}
	}
}
