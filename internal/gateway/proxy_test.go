package gateway_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// startYAML starts a gateway from an inline configuration.
func startYAML(t *testing.T, yaml string, vars map[string]string) *httptest.Server {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(yaml), "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	f.Config.ApplyDefaults()
	g, problems := gateway.New(f, gateway.Options{
		Store:   memory.New(memory.Options{}),
		Metrics: telemetry.NewMetrics("test"),
		Logger:  telemetry.NewLogger(io.Discard, "info"),
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.New: %v", problems)
	}
	s := newFront(t, g)
	t.Cleanup(s.Close)
	return s
}

func TestUnreachableUpstreamIs502Problem(t *testing.T) {
	// A port nothing listens on: take one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	s := startYAML(t, `
upstreams: {api: {url: "${UP}"}}
`, map[string]string{"UP": dead})
	resp, err := http.Get(s.URL + "/anything")
	if err != nil {
		t.Fatalf("GET: %v (want a 502 answer, not a transport error)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status = %d, want 502", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var problem struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&problem); err != nil || problem.Status != 502 || problem.Title == "" {
		t.Errorf("body = %+v, %v; want a problem with status 502 and a title", problem, err)
	}
}

func TestNoRouteIs404(t *testing.T) {
	up := newUpstream(t)
	s := startYAML(t, `
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: api, path: "/api/{rest...}", upstream: api}
`, map[string]string{"UP": up.URL})
	resp, err := http.Get(s.URL + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("status = %d, want 404", resp.StatusCode)
	}
	if up.count("") != 0 {
		t.Errorf("upstream received %d requests, want 0", up.count(""))
	}
}

func TestRewriteAndHopByHopHeaders(t *testing.T) {
	type seen struct {
		path   string
		header http.Header
	}
	var mu sync.Mutex
	var got seen
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = seen{r.URL.RequestURI(), r.Header.Clone()}
		mu.Unlock()
		w.Header().Set("Connection", "X-Upstream-Hop")
		w.Header().Set("X-Upstream-Hop", "secret")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Kept", "yes")
	}))
	t.Cleanup(up.Close)
	s := startYAML(t, `
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: search, path: "/api/search/{type}", upstream: api, rewrite: "/v1/{type}s/"}
`, map[string]string{"UP": up.URL})

	req, _ := http.NewRequest("GET", s.URL+"/api/search/image?q=cat", nil)
	req.Header.Set("Connection", "X-Client-Hop")
	req.Header.Set("X-Client-Hop", "drop me")
	req.Header.Set("Te", "trailers, deflate")
	req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
	req.Header.Set("X-End-To-End", "keep me")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if got.path != "/v1/images/?q=cat" {
		t.Errorf("upstream path = %q, want /v1/images/?q=cat", got.path)
	}
	for _, h := range []string{"X-Client-Hop", "Proxy-Authorization"} {
		if v := got.header.Get(h); v != "" {
			t.Errorf("hop-by-hop %s reached the upstream: %q", h, v)
		}
	}
	if v := got.header.Get("Te"); v != "" && v != "trailers" {
		t.Errorf("Te reached the upstream as %q, want absent or trailers", v)
	}
	if got.header.Get("X-End-To-End") != "keep me" {
		t.Errorf("end-to-end header lost")
	}
	if v := resp.Header.Get("X-Upstream-Hop"); v != "" {
		t.Errorf("upstream hop-by-hop header reached the client: %q", v)
	}
	if resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("Keep-Alive reached the client")
	}
	if resp.Header.Get("X-Kept") != "yes" {
		t.Errorf("end-to-end response header lost")
	}
}

func TestUpstreamConnectionsAreReused(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	up.Start()
	t.Cleanup(up.Close)
	s := startYAML(t, `upstreams: {api: {url: "${UP}"}}`, map[string]string{"UP": up.URL})
	for range 200 {
		resp, err := http.Get(s.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) > 2 {
		t.Errorf("200 sequential requests used %d upstream connections, want keep-alive reuse (≤ 2)", len(conns))
	}
}
