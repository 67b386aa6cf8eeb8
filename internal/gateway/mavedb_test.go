package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// clock is a settable clock for the store: tests step time, never sleep.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	// An instant aligned to every window the examples use (1m, 5m), so a
	// test's requests never straddle a window boundary by accident.
	c.ns.Store(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// upstream is a real HTTP server that records what reached it.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	byXFF   map[string]int // requests by the X-Forwarded-For it received
	byPath  map[string]int
	lastXFF string
	// lastProto is the X-Forwarded-Proto of the last request.
	lastProto string
	// floodgateFields counts requests that reached it with a field named
	// X-Floodgate-…: floodgate's answers to a proxy must stay there.
	floodgateFields int
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{byXFF: map[string]int{}, byPath: map[string]int{}}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		xff := r.Header.Get("X-Forwarded-For")
		u.byXFF[xff]++
		u.byPath[r.URL.Path]++
		u.lastXFF = xff
		u.lastProto = r.Header.Get("X-Forwarded-Proto")
		for k := range r.Header {
			if strings.HasPrefix(k, "X-Floodgate-") {
				u.floodgateFields++
				break
			}
		}
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) count(xffContains string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for k, v := range u.byXFF {
		if strings.Contains(k, xffContains) {
			n += v
		}
	}
	return n
}

// harness runs a gateway built from a configuration file in front of a
// real upstream, with its admin handler and a captured log.
type harness struct {
	t      *testing.T
	g      *gateway.Gateway
	gw     *httptest.Server
	admin  http.Handler
	up     *upstream
	clock  *clock
	logs   *testnet.Buffer
	client *http.Client
}

// newHarness loads file with env as the environment, lets edit change the
// loaded configuration, and starts the gateway.
func newHarness(t *testing.T, file string, env map[string]string, edit func(*config.Config)) *harness {
	t.Helper()
	h := &harness{t: t, up: newUpstream(t), clock: newClock(), logs: &testnet.Buffer{}}
	vars := map[string]string{"FLOODGATE_UPSTREAM": h.up.URL}
	for k, v := range env {
		vars[k] = v
	}
	f, err := config.Load(file, "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("config.Load(%s): %v", file, err)
	}
	if edit != nil {
		edit(&f.Config)
	}
	f.Config.ApplyDefaults()
	metrics := telemetry.NewMetrics("test")
	store := gateway.NewMemoryStore(f.Config.Store.MaxKeys, h.clock.Now, metrics)
	g, problems := gateway.New(f, gateway.Options{
		Store:   store,
		Metrics: metrics,
		Logger:  telemetry.NewLogger(h.logs, "debug"),
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.New: %v", problems)
	}
	h.g, h.gw = g, newFront(t, g)
	t.Cleanup(h.gw.Close)
	h.admin = admin.Handler(admin.Options{Gatherer: metrics.Registry})
	h.client = frontClient(t)
	return h
}

// do sends one request as client ip (in X-Forwarded-For, as a trusted
// load balancer would) and returns the response with its body read.
func (h *harness) do(method, path, ip string, hdr ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.gw.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		h.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp, string(body)
}

// repeat sends n identical requests and returns how many got each status.
func (h *harness) repeat(n int, method, path, ip string, hdr ...string) map[int]int {
	h.t.Helper()
	codes := map[int]int{}
	for range n {
		resp, _ := h.do(method, path, ip, hdr...)
		codes[resp.StatusCode]++
	}
	return codes
}

// metric returns the value of one exposition line such as
// `floodgate_rule_decisions_total{decision="blocked",listener="gateway",rule="rate-limit-ip"}`
// scraped from /metrics, or -1 when the series is absent.
func (h *harness) metric(series string) float64 { return scrape(h.admin, series) }

// scrape reads one series from an admin handler's /metrics, or -1.
func scrape(admin http.Handler, series string) float64 {
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

func decisions(rule, decision string) string {
	return fmt.Sprintf(`floodgate_rule_decisions_total{decision=%q,listener="gateway",rule=%q}`, decision, rule)
}

const mavedb = "../../examples/mavedb.yaml"

var behindLB = map[string]string{"FLOODGATE_TRUSTED_PROXIES": "127.0.0.0/8, ::1/128"}

const (
	clientA  = "203.0.113.7"
	clientB  = "198.51.100.9"
	csvPath  = "/api/v1/score-sets/urn:mavedb:00000053-a-1/scores"
	listPath = "/api/v1/score-sets/urn:mavedb:00000053-a-1"
)

func TestMaveDBPerIPLimit(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)

	if got := h.repeat(1500, "GET", listPath, clientA); got[200] != 1500 {
		t.Fatalf("requests 1-1500 from one client: statuses %v, want 1500×200", got)
	}
	resp, body := h.do("GET", listPath, clientA, "Accept", "application/json")
	if resp.StatusCode != 429 {
		t.Fatalf("request 1501: status %d, want 429; body %s", resp.StatusCode, body)
	}
	for name, want := range map[string]string{
		"Retry-After":                   "300",
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Expose-Headers": "Retry-After",
		"Ratelimit-Policy":              `"rate-limit-ip";q=1500;w=300`,
		"Content-Type":                  "application/problem+json; charset=utf-8",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("429 %s = %q, want %q", name, got, want)
		}
	}
	if got := h.up.count(clientA); got != 1500 {
		t.Errorf("upstream received %d requests from client A, want exactly 1500", got)
	}
	// Another client is unaffected.
	if resp, _ := h.do("GET", listPath, clientB); resp.StatusCode != 200 {
		t.Errorf("client B: status %d, want 200", resp.StatusCode)
	}
	// Five minutes later (the window has slid past), A is admitted again.
	h.clock.Add(10 * time.Minute)
	if resp, _ := h.do("GET", listPath, clientA); resp.StatusCode != 200 {
		t.Errorf("client A after 10 minutes: status %d, want 200", resp.StatusCode)
	}
	if got := h.metric(decisions("rate-limit-ip", "blocked")); got != 1 {
		t.Errorf("rate-limit-ip blocked = %v, want 1", got)
	}
	if strings.Contains(h.logs.String(), clientA) || strings.Contains(h.logs.String(), clientB) {
		t.Errorf("a client address appears in the log:\n%s", h.logs.String())
	}
	if !strings.Contains(h.logs.String(), `"rule":"rate-limit-ip"`) || !strings.Contains(h.logs.String(), `"key_type":"ip"`) {
		t.Errorf("the log does not name the rule and key type of the block:\n%.2000s", h.logs.String())
	}
}

// TestForwardedResponseRateLimitFields: a forwarded answer carries the
// RateLimit fields of the rule it came closest to. The RateLimit value
// lives in the request's pooled state, released when the gateway's
// handler returns; floodgate's server used to read the header only when
// it sent the buffered answer, after that, and sent "RateLimit: " empty
// (it now renders the header at WriteHeader, as net/http copies it).
func TestForwardedResponseRateLimitFields(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)
	// t: the seconds to the end of the current window (w=300).
	for i, want := range []string{`"rate-limit-ip";r=1499;t=300`, `"rate-limit-ip";r=1498;t=300`} {
		resp, _ := h.do("GET", listPath, clientA)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i+1, resp.StatusCode)
		}
		if got := resp.Header.Values("Ratelimit"); len(got) != 1 || got[0] != want {
			t.Errorf("request %d: RateLimit %q, want %q", i+1, got, want)
		}
		if got := resp.Header.Get("Ratelimit-Policy"); got != `"rate-limit-ip";q=1500;w=300` {
			t.Errorf("request %d: RateLimit-Policy %q", i+1, got)
		}
	}
}

func TestMaveDBCSVLimitAndPreflights(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)

	// Logged-in users' browsers send a CORS preflight before each request;
	// preflights never count toward the CSV limit.
	if got := h.repeat(150, "OPTIONS", csvPath, clientA, "Origin", "https://mavedb.org",
		"Access-Control-Request-Method", "GET"); got[200] != 150 {
		t.Fatalf("150 preflights: statuses %v, want 150×200", got)
	}
	if got := h.repeat(100, "GET", csvPath, clientA); got[200] != 100 {
		t.Fatalf("CSV requests 1-100: statuses %v, want 100×200", got)
	}
	resp, body := h.do("GET", csvPath, clientA, "Accept", "text/html", "Accept-Language", "en")
	if resp.StatusCode != 429 {
		t.Fatalf("CSV request 101: status %d, want 429", resp.StatusCode)
	}
	if !strings.Contains(body, "bulk") || !strings.Contains(body, "https://zenodo.org/communities/mavedb") {
		t.Errorf("CSV 429 body does not point to the bulk archive:\n%s", body)
	}
	if got := resp.Header.Get("Retry-After"); got != "300" {
		t.Errorf("CSV 429 Retry-After = %q, want 300", got)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("CSV 429 Access-Control-Allow-Origin = %q, want *", got)
	}
	// Other paths still work for the same client.
	if resp, _ := h.do("GET", listPath, clientA); resp.StatusCode != 200 {
		t.Errorf("non-CSV path after the CSV limit: status %d, want 200", resp.StatusCode)
	}
	// Spanish by Accept-Language.
	resp, body = h.do("GET", csvPath, clientA, "Accept", "text/plain", "Accept-Language", "es-ES,es;q=0.9")
	if resp.StatusCode != 429 || !strings.Contains(body, "descargas") {
		t.Errorf("Spanish CSV 429: status %d body %q", resp.StatusCode, body)
	}
	h.up.mu.Lock()
	got := h.up.byPath[csvPath]
	h.up.mu.Unlock()
	if got != 250 {
		t.Errorf("upstream received %d CSV-path requests, want 250 (150 preflights + 100)", got)
	}
	if got := h.metric(decisions("rate-limit-csv-endpoints", "blocked")); got != 2 {
		t.Errorf("rate-limit-csv-endpoints blocked = %v, want 2", got)
	}
}

func TestMaveDBAICrawlers(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)
	ua := "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	resp, _ := h.do("GET", csvPath, clientA, "User-Agent", ua)
	if resp.StatusCode != 403 {
		t.Errorf("GPTBot on /scores: status %d, want 403", resp.StatusCode)
	}
	for _, p := range []string{"/api/v1/variants/data", "/api/v1/x/mapped-variants", "/api/v1/score-sets/u/counts/"} {
		if resp, _ := h.do("GET", p, clientA, "User-Agent", "CCBot/2.0"); resp.StatusCode != 403 {
			t.Errorf("CCBot on %s: status %d, want 403", p, resp.StatusCode)
		}
	}
	resp, _ = h.do("GET", listPath, clientA, "User-Agent", ua)
	if resp.StatusCode != 200 {
		t.Errorf("GPTBot elsewhere: status %d, want 200 (forwarded)", resp.StatusCode)
	}
	// Dot segments and doubled slashes cannot hide a bulk endpoint.
	for _, p := range []string{"/api/v1/x/scores/.", "/api/v1/x//scores", "/api/v1/x/y/../scores", "/api/v1/x/%73cores"} {
		if resp, _ := h.do("GET", p, clientA, "User-Agent", ua); resp.StatusCode != 403 {
			t.Errorf("GPTBot on %s: status %d, want 403", p, resp.StatusCode)
		}
	}
	if got := h.up.count(clientA); got != 1 {
		t.Errorf("upstream received %d requests from the crawler, want 1", got)
	}
	if got := h.metric(decisions("block-ai-crawlers-on-csv", "denied")); got != 8 {
		t.Errorf("block-ai-crawlers-on-csv denied = %v, want 8", got)
	}
}

func TestMaveDBShadowRule(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)
	// 320 requests within one minute: shadow-requests (count, 300/1m)
	// never blocks, but reports the 20 it would have blocked.
	for i := range 320 {
		if resp, _ := h.do("GET", listPath, clientA); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d, want 200", i+1, resp.StatusCode)
		}
		h.clock.Add(100 * time.Millisecond) // 32 s in all
	}
	if got := h.metric(decisions("shadow-requests", "would_block")); got != 20 {
		t.Errorf("shadow-requests would_block = %v, want 20", got)
	}
	if got := h.metric(decisions("shadow-requests", "allowed")); got != 300 {
		t.Errorf("shadow-requests allowed = %v, want 300", got)
	}
	if got := h.up.count(clientA); got != 320 {
		t.Errorf("upstream received %d, want 320", got)
	}
	if n := strings.Count(h.logs.String(), `"decision":"would_block"`); n != 20 {
		t.Errorf("log has %d would_block records, want 20", n)
	}
}

func TestMaveDBLogOnly(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, func(c *config.Config) { c.Mode = "log-only" })
	if got := h.repeat(1501, "GET", listPath, clientA); got[200] != 1501 {
		t.Fatalf("log-only: statuses %v, want 1501×200", got)
	}
	if resp, _ := h.do("GET", csvPath, clientA, "User-Agent", "GPTBot/1.0"); resp.StatusCode != 200 {
		t.Errorf("log-only: GPTBot on /scores: status %d, want 200", resp.StatusCode)
	}
	if got := h.metric(decisions("rate-limit-ip", "would_block")); got != 2 {
		t.Errorf("log-only: rate-limit-ip would_block = %v, want 2", got)
	}
	if got := h.metric(decisions("rate-limit-ip", "blocked")); got != 0 {
		t.Errorf("log-only: rate-limit-ip blocked = %v, want 0", got)
	}
	if got := h.metric(decisions("block-ai-crawlers-on-csv", "would_block")); got != 1 {
		t.Errorf("log-only: block-ai-crawlers-on-csv would_block = %v, want 1", got)
	}
	if !strings.Contains(h.logs.String(), `"rule":"rate-limit-ip","action":"block","decision":"would_block"`) {
		t.Errorf("log-only: no would_block record for rate-limit-ip in the log")
	}
	if got := h.metric(`floodgate_mode{mode="log-only"}`); got != 1 {
		t.Errorf(`floodgate_mode{mode="log-only"} = %v, want 1`, got)
	}
}

func TestSpoofedForwardedForFromUntrustedPeer(t *testing.T) {
	// No trusted proxies: the peer (127.0.0.1) is the client, whatever
	// X-Forwarded-For says.
	h := newHarness(t, mavedb, nil, nil)
	for i := range 1500 {
		spoof := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if resp, _ := h.do("GET", listPath, spoof); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d, want 200", i+1, resp.StatusCode)
		}
	}
	if resp, _ := h.do("GET", listPath, "192.0.2.1"); resp.StatusCode != 429 {
		t.Errorf("request 1501 with yet another spoofed X-Forwarded-For: status %d, want 429", resp.StatusCode)
	}
	h.up.mu.Lock()
	defer h.up.mu.Unlock()
	if h.up.lastXFF != "127.0.0.1" {
		t.Errorf("upstream got X-Forwarded-For %q, want only the peer 127.0.0.1 (client-written entries dropped)", h.up.lastXFF)
	}
}

// TestForwardedProto: behind a trusted proxy that terminates TLS, the
// upstream is told https, as the proxy said; a client's own
// X-Forwarded-Proto is not passed on.
func TestForwardedProto(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		sent string
		want string
	}{
		{"trusted proxy, https", behindLB, "https", "https"},
		{"trusted proxy, none", behindLB, "", "http"},
		{"untrusted peer", nil, "https", "http"},
	} {
		h := newHarness(t, mavedb, tc.env, nil)
		var hdr []string
		if tc.sent != "" {
			hdr = []string{"X-Forwarded-Proto", tc.sent}
		}
		if resp, _ := h.do("GET", listPath, "192.0.2.1", hdr...); resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", tc.name, resp.StatusCode)
		}
		h.up.mu.Lock()
		if h.up.lastProto != tc.want {
			t.Errorf("%s: upstream got X-Forwarded-Proto %q, want %q", tc.name, h.up.lastProto, tc.want)
		}
		h.up.mu.Unlock()
	}
}

// TestMetricsDocumented: every floodgate_ metric the gateway exports is
// described in docs/metrics.md.
func TestMetricsDocumented(t *testing.T) {
	h := newHarness(t, mavedb, behindLB, nil)
	h.do("GET", listPath, clientA)
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	seen := map[string]bool{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		name, ok := strings.CutPrefix(line, "# TYPE ")
		if !ok || !strings.HasPrefix(name, "floodgate_") {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		seen[name] = true
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("metric %s is not in docs/metrics.md", name)
		}
	}
	if len(seen) < 8 {
		t.Errorf("only %d floodgate metrics exported: %v", len(seen), seen)
	}
}

// TestAccessLog: one JSON line per request, naming the rule that answered
// and those that would have, with no client address.
func TestAccessLog(t *testing.T) {
	var buf testnet.Buffer
	up := newUpstream(t)
	f, err := config.Load(mavedb, "", func(k string) (string, bool) {
		v, ok := map[string]string{"FLOODGATE_UPSTREAM": up.URL, "FLOODGATE_TRUSTED_PROXIES": "127.0.0.0/8"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	c := newClock()
	g, problems := gateway.New(f, gateway.Options{
		Store: gateway.NewMemoryStore(0, c.Now, m), Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info"),
		AccessLog: telemetry.NewAccessLog(&buf), Now: c.Now,
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ts := newFront(t, g)
	defer ts.Close()
	client := frontClient(t)
	for i := range 302 {
		req, _ := http.NewRequest("GET", ts.URL+listPath, nil)
		req.Header.Set("X-Forwarded-For", clientA)
		if i == 301 {
			req.URL.Path = csvPath
			req.Header.Set("User-Agent", "GPTBot/1.2")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 302 {
		t.Fatalf("%d access records, want 302", len(lines))
	}
	if strings.Contains(buf.String(), clientA) {
		t.Error("the access log holds the client address")
	}
	if !strings.Contains(lines[300], `"would_block":["shadow-requests"]`) {
		t.Errorf("record 301 lacks the shadow rule's would-block: %s", lines[300])
	}
	if !strings.Contains(lines[301], `"status":403`) || !strings.Contains(lines[301], `"blocked_by":"block-ai-crawlers-on-csv"`) || !strings.Contains(lines[301], `"ua_class":"crawler"`) {
		t.Errorf("the crawler's record: %s", lines[301])
	}
}
