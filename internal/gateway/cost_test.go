package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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

// costHarness runs a gateway from inline YAML in front of handler, with a
// fake clock shared by the store and the upstream-time measurement.
type costHarness struct {
	*harness
	srv *gateway.Server
}

func newCostHarness(t *testing.T, yaml string, handler http.Handler) *costHarness {
	t.Helper()
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	h := &harness{t: t, clock: newClock(), logs: &testnet.Buffer{}}
	// Clients are told apart by X-Forwarded-For, as behind a load balancer.
	yaml = "client_ip: {trusted_proxies: [127.0.0.0/8]}\n" + strings.ReplaceAll(yaml, "UPSTREAM", up.URL)
	f, err := config.Parse("cost.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
		Store: gateway.NewMemoryStore(0, h.clock.Now, m), Metrics: m,
		Logger: telemetry.NewLogger(h.logs, "info"), Now: h.clock.Now,
	})
	if len(problems) > 0 {
		t.Fatalf("NewServer: %v", problems)
	}
	h.gw = newFront(t, srv)
	t.Cleanup(h.gw.Close)
	h.client = frontClient(t)
	h.admin = admin.Handler(admin.Options{Gatherer: m.Registry})
	return &costHarness{harness: h, srv: srv}
}

// TestCSVBuildCap: 10 concurrent slow CSV requests through
// examples/mavedb.yaml: exactly 4 are forwarded, 6 answered 503 with a
// numeric Retry-After at once (while the 4 are still running).
func TestCSVBuildCap(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // never leave the upstream hanging, even when the test fails
	var arrived atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		<-release
		io.WriteString(w, "csv")
	}))
	defer up.Close()
	h := newHarness(t, mavedb, map[string]string{"FLOODGATE_TRUSTED_PROXIES": "127.0.0.0/8", "FLOODGATE_UPSTREAM": up.URL}, nil)

	type result struct {
		code  int
		retry string
	}
	results := make(chan result, 10)
	for i := range 10 {
		go func() {
			req, _ := http.NewRequest("GET", h.gw.URL+csvPath, nil)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
			resp, err := h.client.Do(req)
			if err != nil {
				results <- result{code: -1}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}
	// The six refusals come back while the four builds are still running.
	for range 6 {
		r := <-results
		if r.code != 503 {
			t.Fatalf("an answer before any build finished: %d, want 503", r.code)
		}
		if n, err := strconv.Atoi(r.retry); err != nil || n <= 0 {
			t.Errorf("503 Retry-After = %q, want a number of seconds", r.retry)
		}
	}
	// The four admitted requests hold their slots; wait until they have all
	// reached the upstream (bounded: it is start-up, not timing).
	for i := 0; arrived.Load() < 4 && i < 1000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if got := arrived.Load(); got != 4 {
		t.Errorf("upstream has %d builds in flight, want 4", got)
	}
	free()
	for range 4 {
		if r := <-results; r.code != 200 {
			t.Errorf("a capped-in request: %d, want 200", r.code)
		}
	}
	if got := h.metric(decisions("cap-csv-builds", "unavailable")); got != 6 {
		t.Errorf("cap-csv-builds unavailable = %v, want 6", got)
	}
	if got := h.metric(decisions("cap-csv-builds", "blocked")); got != 0 {
		t.Errorf("cap-csv-builds blocked = %v, want 0 (no 429)", got)
	}
	// The slots are given back: a new build gets through.
	if resp, _ := h.do("GET", csvPath, "203.0.113.99"); resp.StatusCode != 200 {
		t.Errorf("after the builds finished: %d, want 200", resp.StatusCode)
	}
}

// TestCapRefusalIsUnavailable: a concurrency cap's 503s are counted as
// decision="unavailable", never as "blocked", which stays the 429s of the
// rule's limits; the decision log says the same.
func TestCapRefusalIsUnavailable(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free() // never leave the upstream hanging, even when the test fails
	h := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: cap, key: [], limits: [100/1m], max_inflight: 1}
  - {name: per-ip, limits: [1/1h]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))

	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", h.gw.URL+"/slow", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.1")
		resp, err := h.client.Do(req)
		if err != nil {
			first <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-arrived // the first request holds the cap's one slot at the upstream
	for i := range 2 {
		if resp, _ := h.do("GET", "/slow", "203.0.113.2"); resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("request %d while the slot is held: %d, want 503", i+2, resp.StatusCode)
		}
	}
	free()
	if code := <-first; code != http.StatusOK {
		t.Errorf("the request holding the slot: %d, want 200", code)
	}
	// A 429 of a later rule's limit stays "blocked".
	if resp, _ := h.do("GET", "/fast", "203.0.113.1"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second request from 203.0.113.1: %d, want 429 from per-ip", resp.StatusCode)
	}
	for _, tc := range []struct {
		rule, decision string
		want           float64
	}{
		{"cap", "allowed", 2}, {"cap", "unavailable", 2}, {"cap", "blocked", 0},
		{"per-ip", "allowed", 1}, {"per-ip", "blocked", 1}, {"per-ip", "unavailable", 0},
	} {
		if got := h.metric(decisions(tc.rule, tc.decision)); got != tc.want {
			t.Errorf("%s = %v, want %v", decisions(tc.rule, tc.decision), got, tc.want)
		}
	}
	// The log names what refused: the cap, not the rule's limit.
	var logged []string
	for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var rec struct{ Msg, Decision, Limit string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if rec.Msg == "decision" {
			logged = append(logged, rec.Decision+" "+rec.Limit)
		}
	}
	if want := []string{"unavailable max_inflight 1", "unavailable max_inflight 1", "blocked 1/1h"}; !slices.Equal(logged, want) {
		t.Errorf("decision log: %q, want %q\n%s", logged, want, h.logs.String())
	}
}

// TestHungUpstreamTimesOut: a hung upstream is answered 504 (or 503 where
// the route says so) with Retry-After, by the response-header timeout.
func TestHungUpstreamTimesOut(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	h := newCostHarness(t, `
upstreams:
  api: {url: "UPSTREAM", timeouts: {response_header: 200ms}}
routes:
  - {name: unavailable, path: "/503/{x}", upstream: api, timeout_status: 503, retry_after: 7s}
  - {name: api, path: /, upstream: api}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	resp, body := h.do("GET", "/slow", "")
	if resp.StatusCode != 504 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("hung upstream: %d Retry-After %q, want 504 with Retry-After; %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, _ = h.do("GET", "/503/x", "")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("hung upstream on a 503 route: %d Retry-After %q, want 503 and 7", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestUpstreamSecondsBudget reproduces MaveDB's incident: a client far
// under every request-count limit, whose downloads are slow, is stopped by
// its upstream-time budget; a client with fast requests is not.
func TestUpstreamSecondsBudget(t *testing.T) {
	var c *costHarness
	c = newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [1500/5m]}
  - name: budget
    when: "request.path.endsWith('/scores')"
    cost: upstream_seconds
    limits: [900/1h]
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			c.clock.Add(95 * time.Second) // a full CSV build: 95 upstream-seconds
		}
		io.WriteString(w, "a,b\n")
	}))
	slow, fast := "203.0.113.1", "203.0.113.2"
	served := 0
	for i := range 20 {
		resp, _ := c.do("GET", "/api/v1/score-sets/urn:mavedb:1/scores?slow=1", slow)
		if resp.StatusCode == 429 {
			break
		}
		served = i + 1
	}
	// 900 s at 95 s a build: the 10th build takes it over (served after
	// the fact), the 11th is refused.
	if served != 10 {
		t.Errorf("slow client served %d builds, want 10 (budget 900 s at 95 s each)", served)
	}
	for range 200 {
		if resp, _ := c.do("GET", "/api/v1/score-sets/urn:mavedb:1/scores", fast); resp.StatusCode != 200 {
			t.Fatalf("fast client refused: %d", resp.StatusCode)
		}
	}
	if got := c.metric(`floodgate_rule_cost_total{cost="upstream_seconds",rule="budget"}`); got != 950 {
		t.Errorf("floodgate_rule_cost_total = %v, want 950 (10 builds of 95 s)", got)
	}
}

// TestBan: once over its limit, a key stays refused for the ban's
// duration, after its window has reset.
func TestBan(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: login, limits: [3/1m], ban: 10m}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 3 {
		c.do("GET", "/", "203.0.113.1")
	}
	first, _ := c.do("GET", "/", "203.0.113.1")
	if first.StatusCode != 429 {
		t.Fatalf("4th request: %d, want 429", first.StatusCode)
	}
	// The refusal that starts the ban says when it ends, as every refusal
	// during it does: a client that comes back after the limit's own wait
	// would still be banned.
	if ra := first.Header.Get("Retry-After"); ra != "600" {
		t.Errorf("the refusal that starts the ban: Retry-After %q, want 600 (the ban's 10 minutes)", ra)
	}
	c.clock.Add(3 * time.Minute) // the 1-minute window is long gone
	resp, _ := c.do("GET", "/", "203.0.113.1")
	if resp.StatusCode != 429 {
		t.Errorf("3 minutes later, banned: %d, want 429", resp.StatusCode)
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 400 || ra > 420 {
		t.Errorf("banned Retry-After = %d, want about 7 minutes (420 s)", ra)
	}
	if resp, _ := c.do("GET", "/", "203.0.113.2"); resp.StatusCode != 200 {
		t.Errorf("another client: %d, want 200", resp.StatusCode)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-For", "203.0.113.1")
	if ex := c.srv.Current().Explain(t.Context(), r); ex.Verdict != "429 by rule login" {
		t.Errorf("explain during the ban: %q, want 429 by rule login", ex.Verdict)
	}
	c.clock.Add(8 * time.Minute) // 11 minutes after the ban began
	if resp, _ := c.do("GET", "/", "203.0.113.1"); resp.StatusCode != 200 {
		t.Errorf("after the ban: %d, want 200", resp.StatusCode)
	}
}

// TestCountWhenFailedLogins: only failed logins (401) count; successes
// never do.
func TestCountWhenFailedLogins(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - name: failed-logins
    when: "request.path == '/login'"
    count_when: "response.status == 401"
    limits: [3/10m]
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("password") != "right" {
			w.WriteHeader(401)
		}
	}))
	ip := "203.0.113.5"
	for range 20 {
		if resp, _ := c.do("GET", "/login?password=right", ip); resp.StatusCode != 200 {
			t.Fatalf("successful login refused: %d", resp.StatusCode)
		}
	}
	for i := range 3 {
		if resp, _ := c.do("GET", "/login?password=wrong", ip); resp.StatusCode != 401 {
			t.Fatalf("failed login %d: %d, want the upstream's 401", i+1, resp.StatusCode)
		}
	}
	if resp, _ := c.do("GET", "/login?password=right", ip); resp.StatusCode != 429 {
		t.Errorf("after 3 failed logins: %d, want 429", resp.StatusCode)
	}
}

// TestCandidates: a rule with candidates [50/5m, 200/5m] beside a live
// 100/5m reports three would-block series that match the arithmetic.
func TestCandidates(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: tune, action: count, limits: [100/5m], candidates: [50/5m, 200/5m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var wg sync.WaitGroup
	for range 150 {
		c.do("GET", "/", "203.0.113.9")
	}
	wg.Wait()
	for series, want := range map[string]float64{
		decisions("tune", "would_block"): 50,
		decisions("tune", "allowed"):     100,
		`floodgate_rule_candidate_decisions_total{candidate="50/5m",decision="would_block",listener="gateway",rule="tune"}`:  100,
		`floodgate_rule_candidate_decisions_total{candidate="50/5m",decision="allowed",listener="gateway",rule="tune"}`:      50,
		`floodgate_rule_candidate_decisions_total{candidate="200/5m",decision="would_block",listener="gateway",rule="tune"}`: 0,
		`floodgate_rule_candidate_decisions_total{candidate="200/5m",decision="allowed",listener="gateway",rule="tune"}`:     150,
	} {
		if got := c.metric(series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

// TestRulesReadForwardedHeaders: rules that read the upstream's response
// fields after it (count_when on response.headers, cost: header) see
// them, although floodgate's server otherwise takes a forwarded
// response's fields as lines, without a header map (the gateway keeps the
// map for such requests).
func TestRulesReadForwardedHeaders(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - name: cache-misses
    when: "request.path == '/search'"
    count_when: "'x-cache' in response.headers && response.headers['x-cache'] == 'miss'"
    limits: [2/10m]
  - name: complexity
    when: "request.path == '/graphql'"
    cost: header:X-Cost
    limits: [10/10m]
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cache", r.URL.Query().Get("cache"))
		w.Header().Set("X-Cost", "4")
		io.WriteString(w, "ok")
	}))
	ip := "203.0.113.6"
	for range 5 {
		if resp, _ := c.do("GET", "/search?cache=hit", ip); resp.StatusCode != 200 {
			t.Fatalf("cache hit refused: %d", resp.StatusCode)
		}
	}
	for i := range 2 {
		if resp, _ := c.do("GET", "/search?cache=miss", ip); resp.StatusCode != 200 {
			t.Fatalf("cache miss %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := c.do("GET", "/search?cache=hit", ip); resp.StatusCode != 429 {
		t.Errorf("after 2 misses: %d, want 429", resp.StatusCode)
	}
	// 4 + 4 + 4 charged (the third goes over: the budget fills), then refused.
	for i := range 3 {
		if resp, _ := c.do("GET", "/graphql", ip); resp.StatusCode != 200 {
			t.Fatalf("query %d: %d", i+1, resp.StatusCode)
		}
	}
	if resp, _ := c.do("GET", "/graphql", ip); resp.StatusCode != 429 {
		t.Errorf("after 12 of a budget of 10: %d, want 429", resp.StatusCode)
	}
}

// TestRateLimitFieldsBeforeUpstreams: a forwarded answer carries
// floodgate's RateLimit fields first, then any the upstream sent, whether
// the upstream's fields reach the server as lines or through the header
// map (a rule reading the response's fields keeps the map).
func TestRateLimitFieldsBeforeUpstreams(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [100/1m]}
  - name: misses
    when: "request.path == '/map'"
    count_when: "'x-cache' in response.headers"
    limits: [100/1m]
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", `"upstream";q=10;w=1`)
		w.Header().Set("RateLimit", `"upstream";r=9;t=1`)
		io.WriteString(w, "ok")
	}))
	for _, path := range []string{"/lines", "/map"} {
		resp, _ := c.do("GET", path, "203.0.113.8")
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		policy, rl := resp.Header.Values("Ratelimit-Policy"), resp.Header.Values("Ratelimit")
		if len(policy) != 2 || !strings.HasPrefix(policy[0], `"per-ip"`) || policy[1] != `"upstream";q=10;w=1` {
			t.Errorf("%s: RateLimit-Policy %q, want floodgate's then the upstream's", path, policy)
		}
		if len(rl) != 2 || !strings.HasPrefix(rl[0], `"per-ip";r=`) || rl[1] != `"upstream";r=9;t=1` {
			t.Errorf("%s: RateLimit %q, want floodgate's then the upstream's", path, rl)
		}
	}
}

// TestUpstreamSecondsChargedWithoutAnswer: the upstream's time is charged
// when it never answered, since it was working all the same: a request
// that timed out (504) and one whose client hung up before the answer
// each cost the time the upstream held them. A client cannot escape its
// budget by giving up just before the answer comes.
func TestUpstreamSecondsChargedWithoutAnswer(t *testing.T) {
	var c *costHarness
	working := make(chan struct{}, 1)
	c = newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM", timeouts: {response_header: 200ms}}}
rules:
  - {name: budget, cost: upstream_seconds, limits: [900/1h]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.clock.Add(95 * time.Second) // a CSV build that never finishes
		working <- struct{}{}
		<-r.Context().Done()
	}))
	const series = `floodgate_rule_cost_total{cost="upstream_seconds",rule="budget"}`
	waitCharged := func(want float64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); c.metric(series) < want && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if got := c.metric(series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	resp, _ := c.do("GET", "/scores", "203.0.113.1")
	<-working
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("hung upstream: %d, want 504", resp.StatusCode)
	}
	waitCharged(95)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", c.gw.URL+"/scores", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.2")
	done := make(chan error, 1)
	go func() {
		resp, err := c.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-working
	cancel() // the client hangs up while the upstream works
	<-done
	waitCharged(190)
}

// TestHeaderCostTooLarge: a cost header larger than the budget, however
// large, counts as twice the budget (the most a budget owes): the next
// request is refused. It never counts as nothing.
func TestHeaderCostTooLarge(t *testing.T) {
	for _, cost := range []string{"1e16", "1e300", "1e400", "99999999999999999999"} {
		t.Run(cost, func(t *testing.T) {
			c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: units, cost: "header:X-Cost", limits: [100/1h]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Cost", cost)
			}))
			if resp, _ := c.do("GET", "/q", "203.0.113.1"); resp.StatusCode != http.StatusOK {
				t.Fatalf("first request: %d, want 200", resp.StatusCode)
			}
			if resp, _ := c.do("GET", "/q", "203.0.113.1"); resp.StatusCode != http.StatusTooManyRequests {
				t.Errorf("after a response costing %s of a budget of 100: %d, want 429", cost, resp.StatusCode)
			}
			if got := c.metric(`floodgate_rule_cost_total{cost="header",rule="units"}`); got != 200 {
				t.Errorf("floodgate_rule_cost_total = %v, want 200 (twice the budget)", got)
			}
		})
	}
}

// TestBudgetDebt: what a request costs beyond what remains of a budget is
// owed, and repaid before the client's next request is admitted, so that
// a client sending a request every second spends no more than its budget
// over time (plus one request's cost), whatever the algorithm.
func TestBudgetDebt(t *testing.T) {
	for _, alg := range []string{"sliding_window", "gcra", "fixed_window"} {
		t.Run(alg, func(t *testing.T) {
			c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: units, cost: "header:X-Cost", algorithm: `+alg+`, limits: [100/1m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Cost", "60")
			}))
			start := c.clock.Now()
			var spent int
			for range 600 { // ten minutes, a request a second
				c.clock.Add(time.Second)
				resp, _ := c.do("GET", "/q", "203.0.113.1")
				if resp.StatusCode == http.StatusOK {
					spent += 60
				}
			}
			minutes := int(c.clock.Now().Sub(start) / time.Minute)
			t.Logf("%s: %d units spent in %d minutes", alg, spent, minutes)
			// GCRA: the budget each minute, the first burst, one request
			// over. The windows: each aligned window at most its budget
			// and one request over it (a sliding window's estimate of the
			// window before lets it go that far).
			most := 100*(minutes+1) + 60
			if alg != "gcra" {
				most = (100 + 60) * (minutes + 1)
			}
			if spent > most {
				t.Errorf("spent %d units in %d minutes of a budget of 100 a minute, want at most %d", spent, minutes, most)
			}
			if spent < 100*(minutes-1) {
				t.Errorf("spent %d units in %d minutes of a budget of 100 a minute: the budget was not used", spent, minutes)
			}
		})
	}
}

// TestBudgetDebtRetryAfter: a client in debt is told how long it owes:
// Retry-After covers the debt, and the request sent then is admitted.
func TestBudgetDebtRetryAfter(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: units, cost: "header:X-Cost", algorithm: gcra, limits: [60/1m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cost", "90")
	}))
	if resp, _ := c.do("GET", "/q", "203.0.113.1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d, want 200", resp.StatusCode)
	}
	// 90 units of a budget of 60 a minute, one unit a second back: the
	// next unit is there after 31 s.
	resp, _ := c.do("GET", "/q", "203.0.113.1")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "31" {
		t.Fatalf("in debt: %d Retry-After %q, want 429 Retry-After 31", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	c.clock.Add(30 * time.Second)
	if resp, _ := c.do("GET", "/q", "203.0.113.1"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("1 s before Retry-After: %d, want 429", resp.StatusCode)
	}
	c.clock.Add(time.Second)
	if resp, _ := c.do("GET", "/q", "203.0.113.1"); resp.StatusCode != http.StatusOK {
		t.Fatalf("after Retry-After: %d, want 200", resp.StatusCode)
	}
}

// TestReloadDropsRemovedCandidateSeries: a reload that removes a
// candidate limit from a rule it keeps removes that candidate's series
// from /metrics; the others keep counting.
func TestReloadDropsRemovedCandidateSeries(t *testing.T) {
	conf := func(candidates string) string {
		return `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [100/1m], candidates: [` + candidates + `]}
`
	}
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	c := newCostHarness(t, conf("2/1m, 6/1m"), up)
	for range 3 {
		c.do("GET", "/q", "203.0.113.1")
	}
	exposition := func() string {
		rec := httptest.NewRecorder()
		c.admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	if text := exposition(); !strings.Contains(text, `candidate="2/1m"`) || !strings.Contains(text, `candidate="6/1m"`) {
		t.Fatalf("before the reload, /metrics lacks a candidate's series")
	}
	up2 := httptest.NewServer(up)
	t.Cleanup(up2.Close)
	yaml := strings.ReplaceAll(conf("6/1m"), "UPSTREAM", up2.URL)
	f, err := config.Parse("cost.yaml", []byte("client_ip: {trusted_proxies: [127.0.0.0/8]}\n"+yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if _, problems := c.srv.Reload(f, []byte(yaml)); len(problems) > 0 {
		t.Fatalf("Reload: %v", problems)
	}
	c.do("GET", "/q", "203.0.113.1")
	text := exposition()
	if strings.Contains(text, `candidate="2/1m"`) {
		t.Errorf("after a reload that removed candidate 2/1m, /metrics still has its series")
	}
	if got := c.metric(`floodgate_rule_candidate_decisions_total{candidate="6/1m",decision="allowed",listener="gateway",rule="per-ip"}`); got != 4 {
		t.Errorf("candidate 6/1m allowed = %v after the reload, want 4 (kept counting)", got)
	}
}
