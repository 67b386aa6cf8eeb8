package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// TestCostFeaturesWithRedis: counting on the response, candidates and
// caps work the same with the Redis store as with the memory one (the
// parts that do not need a stepped clock; Redis keeps its own time).
func TestCostFeaturesWithRedis(t *testing.T) {
	rs := redistest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("password") == "wrong" {
			w.WriteHeader(401)
		}
	}))
	defer up.Close()
	yaml := `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "` + rs.URL() + `", timeout: 5s}
upstreams: {api: {url: "` + up.URL + `"}}
rules:
  - {name: tune, action: count, limits: [100/5m], candidates: [50/5m, 200/5m]}
  - name: failed-logins
    when: "request.path == '/login'"
    count_when: "response.status == 401"
    limits: [3/10m]
`
	_, h := redisGateway(t, yaml)

	for range 20 {
		if resp, _ := h.do("GET", "/login?password=right", "203.0.113.5"); resp.StatusCode != 200 {
			t.Fatalf("successful login refused: %d", resp.StatusCode)
		}
	}
	for range 3 {
		h.do("GET", "/login?password=wrong", "203.0.113.5")
	}
	if resp, _ := h.do("GET", "/login?password=right", "203.0.113.5"); resp.StatusCode != 429 {
		t.Errorf("after 3 failed logins (Redis): %d, want 429", resp.StatusCode)
	}

	for range 150 {
		h.do("GET", "/", "198.51.100.9")
	}
	for series, want := range map[string]float64{
		decisions("tune", "would_block"): 50,
		`floodgate_rule_candidate_decisions_total{candidate="50/5m",decision="would_block",listener="gateway",rule="tune"}`:  100,
		`floodgate_rule_candidate_decisions_total{candidate="200/5m",decision="would_block",listener="gateway",rule="tune"}`: 0,
	} {
		// tune also saw the 24 login requests of another client: its own
		// counter, so the arithmetic of 198.51.100.9 holds.
		if got := h.metric(series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if out, err := rs.Do("DBSIZE"); err != nil || strings.TrimSpace(out) == "0" {
		t.Errorf("Redis holds no keys (%q, %v)", out, err)
	}
}

// TestClientGoneIsCounted: a request whose client hung up while its
// decision was being made is counted all the same. The request's context
// ends when the client goes (at once under net/http's server, when the
// disconnect watch looks under floodgate's); deciding under it would fail
// the store's call, and a client that hangs up after each request would
// then never be counted, and would show as a store failure.
func TestClientGoneIsCounted(t *testing.T) {
	rs := redistest.Start(t)
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer up.Close()
	yaml := `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "` + rs.URL() + `", timeout: 5s}
upstreams: {api: {url: "` + up.URL + `"}}
rules:
  - {name: per-ip, limits: [2/1h]}
`
	srv, h := redisGateway(t, yaml)

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 2 {
		req := httptest.NewRequest("GET", "/", nil).WithContext(gone)
		req.RemoteAddr = "203.0.113.7:4000"
		srv.ServeHTTP(httptest.NewRecorder(), req)
	}
	if resp, _ := h.do("GET", "/", "203.0.113.7"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third request: %d, want 429: the two whose client left were not counted", resp.StatusCode)
	}
	for _, series := range []string{
		`floodgate_rule_errors_total{kind="store",rule="per-ip"}`,
		`floodgate_store_errors_total`,
	} {
		if got := h.metric(series); got != 0 {
			t.Errorf("%s = %v, want 0: the store did not fail", series, got)
		}
	}
}

// TestStoreTimeout: the timeout a Redis store is made with, which the
// start-up line reports: store.timeout, unless it is the default and the
// URL sets one.
func TestStoreTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, url, timeout string
		want               time.Duration
	}{
		{name: "memory", url: "memory", timeout: "100ms", want: 0},
		{name: "default", url: "redis://127.0.0.1:6379", timeout: "100ms", want: 100 * time.Millisecond},
		{name: "file", url: "redis://127.0.0.1:6379", timeout: "250ms", want: 250 * time.Millisecond},
		{name: "url over the default", url: "redis://127.0.0.1:6379?timeout=5s", timeout: "100ms", want: 5 * time.Second},
		{name: "file over url", url: "redis://127.0.0.1:6379?timeout=5s", timeout: "1s", want: time.Second},
		{name: "bad url", url: "redis://127.0.0.1:99999", timeout: "100ms", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Store{URL: tc.url, Timeout: tc.timeout}
			if got := gateway.StoreTimeout(c); got != tc.want {
				t.Errorf("StoreTimeout(%+v) = %v, want %v", *c, got, tc.want)
			}
		})
	}
}

// redisGateway serves the configuration yaml, whose store is a Redis,
// behind floodgate's own server until the test ends.
func redisGateway(t *testing.T, yaml string) (*gateway.Server, *harness) {
	t.Helper()
	f, err := config.Parse("redis.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	store, closer, err := gateway.NewStore(&f.Config.Store, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{Store: store, Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info")})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ts := newFront(t, srv)
	t.Cleanup(ts.Close)
	return srv, &harness{t: t, gw: ts, client: frontClient(t), admin: admin.Handler(admin.Options{Gatherer: m.Registry})}
}
