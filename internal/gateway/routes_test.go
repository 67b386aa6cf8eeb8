package gateway_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestValidatedRoutes: Openverse's API routes reach only the
// rewritten API paths, with allowed query parameters, whatever the client
// encodes; everything else goes to the frontend.
func TestValidatedRoutes(t *testing.T) {
	var mu sync.Mutex
	var apiSeen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		apiSeen = append(apiSeen, r.URL.RequestURI())
		mu.Unlock()
	}))
	defer api.Close()
	frontend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "frontend") }))
	defer frontend.Close()
	const id = "4bc43a04-ef46-4544-a0c1-63c63f56e276"
	c := newCostHarness(t, `
upstreams:
  api: {url: "`+api.URL+`"}
  frontend: {url: "`+frontend.URL+`"}
routes:
  - name: search-image
    path: /api/search/image
    rewrite: /v1/images/
    upstream: api
    query: {allow: [q, page, page_size, license], max: {page_size: 20}}
  - name: single
    path: /api/{type}/{id}
    params: {type: "image|audio", id: uuid}
    rewrite: /v1/{type}s/{id}/
    upstream: api
  - {name: site, path: /, upstream: frontend}
`, http.NotFoundHandler())

	resp, _ := c.do("GET", "/api/search/image?q=cat&api_key=x&page_size=20&mature=1", "")
	if resp.StatusCode != 200 {
		t.Fatalf("search: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/api/search/image?q=cat&page_size=50", ""); resp.StatusCode != 400 {
		t.Errorf("page_size 50: %d, want 400", resp.StatusCode)
	}
	c.do("GET", "/api/image/"+id, "")
	if resp, body := c.do("GET", "/api/image/not-a-uuid", ""); resp.StatusCode != 200 || body != "frontend" {
		t.Errorf("a bad id: %d %q, want the frontend", resp.StatusCode, body)
	}
	// Hostile paths, sent raw: none may reach another API path.
	for _, p := range []string{
		"/api/image/" + id + "%2F..%2F..%2Fadmin",
		"/api/image/..%2F..%2Fv1%2Fauth_tokens%2Ftoken",
		"/api/%2e%2e/%2e%2e/v1/auth_tokens/token/",
		"/api/image/%252e%252e%252fadmin",
		"/api/search/image/../../../v1/auth_tokens/token/",
		"/api/video/" + id,
		"/api/image/" + strings.ToUpper(id) + "x",
	} {
		conn, err := net.Dial("tcp", c.gw.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, "GET "+p+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		io.ReadAll(conn)
		conn.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/v1/images/?q=cat&page_size=20", "/v1/images/" + id + "/"}
	if len(apiSeen) != len(want) {
		t.Fatalf("the API upstream saw %q, want exactly %q", apiSeen, want)
	}
	for i := range want {
		if apiSeen[i] != want[i] {
			t.Errorf("API request %d = %q, want %q", i, apiSeen[i], want[i])
		}
	}
}

// TestGetRouteTakesHead: a route for GET takes HEAD too, as Go's ServeMux
// and nginx's limit_except GET do, and a method the route does not list
// still falls through to the next route.
func TestGetRouteTakesHead(t *testing.T) {
	seen := make(chan string, 8)
	up := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen <- name + " " + r.Method
		}))
		t.Cleanup(s.Close)
		return s
	}
	api, other := up("api"), up("other")
	c := newCostHarness(t, `
upstreams:
  api: {url: "`+api.URL+`"}
  other: {url: "`+other.URL+`"}
routes:
  - {name: read, path: /items, methods: [get], upstream: api}
  - {name: rest, path: /, upstream: other}
`, http.NotFoundHandler())
	for _, tc := range []struct{ method, want string }{
		{"GET", "api GET"}, {"HEAD", "api HEAD"}, {"POST", "other POST"},
	} {
		resp, _ := c.do(tc.method, "/items", "203.0.113.1")
		if resp.StatusCode != 200 {
			t.Errorf("%s /items = %d, want 200", tc.method, resp.StatusCode)
			continue
		}
		if got := <-seen; got != tc.want {
			t.Errorf("%s /items reached %q, want %q", tc.method, got, tc.want)
		}
	}
}
