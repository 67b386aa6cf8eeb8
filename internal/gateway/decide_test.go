package gateway_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// The proxy's address in these tests: the only trusted one. The tests'
// other requests come from 127.0.0.1, an untrusted peer.
const proxyAddr = "127.0.0.2"

// decideHarness runs one Server's gateway and decision listeners on one
// store, with a client that connects from the trusted proxy's address and
// one that connects from elsewhere.
type decideHarness struct {
	t         testing.TB
	srv       *gateway.Server
	gw, dec   *httptest.Server
	admin     http.Handler
	up        *upstream // nil in benchmarks
	clock     *clock
	logs      *testnet.Buffer
	proxy     *http.Client // from proxyAddr
	untrusted *http.Client // from 127.0.0.1
}

func newDecideHarness(t testing.TB, protocol string, edit func(*config.Config)) *decideHarness {
	t.Helper()
	h := &decideHarness{t: t, clock: newClock(), logs: &testnet.Buffer{}}
	vars := map[string]string{
		"FLOODGATE_TRUSTED_PROXIES": proxyAddr,
		"FLOODGATE_DECIDE_LISTEN":   "127.0.0.1:0",
		"FLOODGATE_DECIDE_PROTOCOL": protocol,
	}
	if tt, ok := t.(*testing.T); ok {
		h.up = newUpstream(tt)
		vars["FLOODGATE_UPSTREAM"] = h.up.URL
	}
	f, err := config.Load("../../examples/mavedb.yaml", "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	if edit != nil {
		edit(&f.Config)
	}
	f.Config.ApplyDefaults()
	metrics := telemetry.NewMetrics("test")
	store := gateway.NewMemoryStore(f.Config.Store.MaxKeys, h.clock.Now, metrics)
	srv, problems := gateway.NewServer(f, nil, gateway.Options{
		Store: store, Metrics: metrics, Logger: telemetry.NewLogger(h.logs, "debug"),
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.NewServer: %v", problems)
	}
	h.srv = srv
	h.gw = newFront(t, srv)
	h.dec = newFront(t, srv.Decide())
	h.admin = admin.Handler(admin.Options{Gatherer: metrics.Registry})
	h.proxy = clientFrom(t, proxyAddr)
	h.untrusted = clientFrom(t, "127.0.0.1")
	return h
}

// clientFrom returns a client whose connections come from the loopback
// address ip.
func clientFrom(t testing.TB, ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// ask sends one request to the decision listener with the header fields
// hdr (name, value pairs) and returns the answer with its body.
func (h *decideHarness) ask(c *http.Client, method, target string, hdr ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.dec.URL+target, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// forwarded asks as Caddy's forward_auth and Traefik's ForwardAuth do.
func (h *decideHarness) forwarded(method, uri, client string, hdr ...string) (*http.Response, string) {
	return h.ask(h.proxy, http.MethodGet, "/decide", append([]string{
		"X-Forwarded-Method", method, "X-Forwarded-Uri", uri, "X-Forwarded-Host", "api.mavedb.org",
		"X-Forwarded-Proto", "https", "X-Forwarded-For", client,
	}, hdr...)...)
}

// viaGateway sends one request through the gateway listener as the
// trusted proxy would, for client.
func (h *decideHarness) viaGateway(method, path, client string) int {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.gw.URL+path, nil)
	req.Header.Set("X-Forwarded-For", client)
	resp, err := h.proxy.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (h *decideHarness) metric(name string) float64 {
	h.t.Helper()
	return scrapeMetric(h.t, h.admin, name)
}

// scrapeMetric returns the value of the series written exactly as name in
// the admin handler's exposition, 0 when absent.
func scrapeMetric(t testing.TB, adm http.Handler, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	adm.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err == nil {
				return f
			}
		}
	}
	return 0
}

// TestDecideSharesCountersWithGateway: one client, half its requests
// through the gateway and half asked about by a proxy, is limited at the
// same 1,500 / 5 min of examples/mavedb.yaml; the 1,501st is refused with
// the gateway's own answer (problem+json, Retry-After: 300, the RateLimit
// fields) and the allowed ones carry the RateLimit fields on an empty 200.
func TestDecideSharesCountersWithGateway(t *testing.T) {
	h := newDecideHarness(t, config.DecideForwarded, nil)
	const client = "203.0.113.7"
	for i := range 750 {
		if code := h.viaGateway("GET", "/api/v1/score-sets/", client); code != 200 {
			t.Fatalf("gateway request %d = %d, want 200", i+1, code)
		}
	}
	for i := range 750 {
		resp, body := h.forwarded("GET", "/api/v1/score-sets/?page=2", client)
		if resp.StatusCode != 200 || body != "" {
			t.Fatalf("decision %d = %d %q, want 200 and no body", i+1, resp.StatusCode, body)
		}
		if i == 0 {
			if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"rate-limit-ip";r=749;t=`) {
				t.Errorf("allowed RateLimit = %q, want the rule's remaining 749", got)
			}
			if got := resp.Header.Get("RateLimit-Policy"); got != `"rate-limit-ip";q=1500;w=300` {
				t.Errorf("allowed RateLimit-Policy = %q", got)
			}
		}
	}
	resp, body := h.forwarded("GET", "/api/v1/score-sets/", client, "Accept", "application/json")
	if resp.StatusCode != 429 {
		t.Fatalf("1,501st decision = %d %s, want 429", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got != "300" {
		t.Errorf("Retry-After = %q, want 300", got)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("Content-Type = %q, want problem+json", ct)
	}
	if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
		t.Errorf("429 lacks RateLimit fields: %v", resp.Header)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("429 lacks the CORS header of responses.cors: %v", resp.Header)
	}
	if code := h.viaGateway("GET", "/api/v1/score-sets/", client); code != 429 {
		t.Errorf("gateway after 1,500 shared = %d, want 429", code)
	}
	if n := h.up.count(client); n != 750 {
		t.Errorf("upstream saw %d requests of the client, want the gateway's 750", n)
	}
	for name, want := range map[string]float64{
		`floodgate_rule_decisions_total{decision="allowed",listener="decide",rule="rate-limit-ip"}`:  750,
		`floodgate_rule_decisions_total{decision="blocked",listener="decide",rule="rate-limit-ip"}`:  1,
		`floodgate_rule_decisions_total{decision="allowed",listener="gateway",rule="rate-limit-ip"}`: 750,
		`floodgate_rule_decisions_total{decision="blocked",listener="gateway",rule="rate-limit-ip"}`: 1,
		`floodgate_requests_total{code="200",listener="decide",route="api"}`:                         750,
		`floodgate_requests_total{code="429",listener="decide",route="api"}`:                         1,
		`floodgate_requests_total{code="200",listener="gateway",route="api"}`:                        750,
	} {
		if got := h.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestDecideNginxAnswers: nginx's auth_request passes on only 2xx, 401
// and 403, so a limit's 429 and a deny rule's 403 both reach it as 403,
// told apart by X-Floodgate-Status, with Retry-After and the RateLimit
// fields for the 429.
func TestDecideNginxAnswers(t *testing.T) {
	h := newDecideHarness(t, config.DecideNginx, func(c *config.Config) {
		c.Rules[2].Limits = []string{"3/5m"} // rate-limit-ip
	})
	nginx := func(uri, client string, hdr ...string) (*http.Response, string) {
		return h.ask(h.proxy, http.MethodGet, "/decide", append([]string{
			"X-Original-Method", "GET", "X-Original-URI", uri, "X-Forwarded-For", client,
		}, hdr...)...)
	}
	for i := range 3 {
		if resp, _ := nginx("/api/v1/experiments/", "198.51.100.1"); resp.StatusCode != 200 {
			t.Fatalf("decision %d = %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp, _ := nginx("/api/v1/experiments/", "198.51.100.1")
	if resp.StatusCode != 403 || resp.Header.Get("X-Floodgate-Status") != "429" || resp.Header.Get("Retry-After") != "300" {
		t.Errorf("over the limit = %d, X-Floodgate-Status %q, Retry-After %q; want 403, 429, 300",
			resp.StatusCode, resp.Header.Get("X-Floodgate-Status"), resp.Header.Get("Retry-After"))
	}
	if resp.Header.Get("RateLimit") == "" {
		t.Errorf("limited answer lacks RateLimit: %v", resp.Header)
	}
	resp, _ = nginx("/api/v1/score-sets/urn:mavedb:1/scores", "198.51.100.2", "User-Agent", "Mozilla/5.0 (compatible; GPTBot/1.2)")
	if resp.StatusCode != 403 || resp.Header.Get("X-Floodgate-Status") != "403" {
		t.Errorf("GPTBot on CSV = %d, X-Floodgate-Status %q; want 403, 403", resp.StatusCode, resp.Header.Get("X-Floodgate-Status"))
	}
	if got := h.metric(`floodgate_rule_decisions_total{decision="denied",listener="decide",rule="block-ai-crawlers-on-csv"}`); got != 1 {
		t.Errorf("denied decisions = %v, want 1", got)
	}
	for _, want := range []string{`"decision":"blocked","listener":"decide","route":"api"`, `"decision":"denied","listener":"decide","route":"csv-scores"`} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("the decision log has no record with %s:\n%s", want, h.logs.String())
		}
	}
}

// TestDecideRefusesWhatItCannotTrust: a peer outside trusted_proxies, and
// a proxy request without what its protocol needs, get a 4xx that says
// why, and nothing is counted for them.
func TestDecideRefusesWhatItCannotTrust(t *testing.T) {
	h := newDecideHarness(t, config.DecideNginx, func(c *config.Config) {
		c.Rules[2].Limits = []string{"2/5m"}
	})
	full := []string{"X-Original-Method", "GET", "X-Original-URI", "/api/v1/x", "X-Forwarded-For", "192.0.2.9"}
	for _, tc := range []struct {
		name   string
		client *http.Client
		hdr    []string
		status int
		why    string
	}{
		{"untrusted peer", h.untrusted, full, 403, "client_ip.trusted_proxies"},
		{"no method", h.proxy, []string{"X-Original-URI", "/api/v1/x", "X-Forwarded-For", "192.0.2.9"}, 400, "X-Original-Method is missing"},
		{"no uri", h.proxy, []string{"X-Original-Method", "GET", "X-Forwarded-For", "192.0.2.9"}, 400, "X-Original-Uri is missing"},
		{"no client address", h.proxy, []string{"X-Original-Method", "GET", "X-Original-URI", "/api/v1/x"}, 400, "X-Forwarded-For is missing"},
		{"uri sent twice", h.proxy, append(full, "X-Original-URI", "/other"), 400, "more than once"},
		{"absolute uri", h.proxy, []string{"X-Original-Method", "GET", "X-Original-URI", "http://evil/api", "X-Forwarded-For", "192.0.2.9"}, 400, "not a path"},
	} {
		for range 3 { // more than the limit: none of them may count
			resp, _ := h.ask(tc.client, "GET", "/decide", tc.hdr...)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("X-Floodgate-Decide-Error"), tc.why) {
				t.Errorf("%s: %d %q, want %d and a reason with %q", tc.name, resp.StatusCode,
					resp.Header.Get("X-Floodgate-Decide-Error"), tc.status, tc.why)
			}
		}
	}
	if resp, _ := h.ask(h.proxy, "GET", "/decide", full...); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"rate-limit-ip";r=1;`) {
		t.Errorf("first real decision = %d %q, want 200 with 1 remaining (nothing counted before)", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// Asked three times each: one line per kind of refusal, not one per
	// request (a misconfigured proxy asks with every request).
	if n := strings.Count(h.logs.String(), `"msg":"decision refused`); n != 6 {
		t.Errorf("%d decision refused lines for 18 refusals of 6 kinds, want 6:\n%s", n, h.logs.String())
	}
	if !strings.Contains(h.logs.String(), "peer_hash") || strings.Contains(h.logs.String(), "127.0.0.1") {
		t.Errorf("the untrusted peer is not logged, or logged raw:\n%s", h.logs.String())
	}
	if resp, _ := h.ask(h.proxy, "GET", "/other", full...); resp.StatusCode != 404 {
		t.Errorf("GET /other on the decision listener = %d, want 404", resp.StatusCode)
	}
}

// TestDecideSkipsRulesThatNeedTheResponse: the CSV concurrency cap and
// the upstream-seconds budget of examples/mavedb.yaml cannot be applied
// without seeing the response; on the decision listener they are skipped,
// not half applied (no slot is held for ever, no 503 after four).
func TestDecideSkipsRulesThatNeedTheResponse(t *testing.T) {
	h := newDecideHarness(t, config.DecideForwarded, nil)
	for i := range 10 {
		if resp, body := h.forwarded("GET", "/api/v1/score-sets/urn:mavedb:1/scores", "192.0.2.44"); resp.StatusCode != 200 {
			t.Fatalf("CSV decision %d = %d %s, want 200", i+1, resp.StatusCode, body)
		}
	}
	for _, rule := range []string{"cap-csv-builds", "budget-csv-upstream-time"} {
		if got := h.metric(`floodgate_rule_decisions_total{decision="allowed",listener="decide",rule="` + rule + `"}`); got != 0 {
			t.Errorf("%s decided %v times on the decision listener, want 0 (skipped)", rule, got)
		}
	}
	if got := h.metric(`floodgate_rule_decisions_total{decision="allowed",listener="decide",rule="rate-limit-csv-endpoints"}`); got != 10 {
		t.Errorf("rate-limit-csv-endpoints allowed %v, want 10", got)
	}
	// The gateway still holds its cap: the slots were never taken.
	if code := h.viaGateway("GET", "/api/v1/score-sets/urn:mavedb:1/scores", "192.0.2.45"); code != 200 {
		t.Errorf("gateway CSV request after the decisions = %d, want 200", code)
	}
}

// TestDecideLogOnly: in log-only mode the decision listener refuses
// nothing and counts would_block, as the gateway does.
func TestDecideLogOnly(t *testing.T) {
	h := newDecideHarness(t, config.DecideForwarded, func(c *config.Config) {
		c.Mode = config.ModeLogOnly
		c.Rules[2].Limits = []string{"1/5m"}
	})
	for i := range 3 {
		if resp, _ := h.forwarded("GET", "/api/v1/x", "192.0.2.50"); resp.StatusCode != 200 {
			t.Fatalf("log-only decision %d = %d, want 200", i+1, resp.StatusCode)
		}
	}
	if resp, _ := h.forwarded("GET", "/api/v1/score-sets/urn:mavedb:1/counts", "192.0.2.51", "User-Agent", "CCBot/2.0"); resp.StatusCode != 200 {
		t.Errorf("log-only deny = %d, want 200", resp.StatusCode)
	}
	for name, want := range map[string]float64{
		`floodgate_rule_decisions_total{decision="would_block",listener="decide",rule="rate-limit-ip"}`:            2,
		`floodgate_rule_decisions_total{decision="would_block",listener="decide",rule="block-ai-crawlers-on-csv"}`: 1,
	} {
		if got := h.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	h.srv.SetMode(false)
	if resp, _ := h.forwarded("GET", "/api/v1/x", "192.0.2.50"); resp.StatusCode != 429 {
		t.Errorf("enforcing again: %d, want 429", resp.StatusCode)
	}
}
