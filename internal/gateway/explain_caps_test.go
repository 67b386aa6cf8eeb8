package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/gateway"
)

// TestExplainSeesCapsAndBans: explain answers "why was this request
// refused?" for what refuses without a counter running out too. With a
// rule's concurrency cap full it says 503 by that rule, as the request
// itself gets, and how many are in flight; a count rule's full cap is a
// would_block; a full route cap is the verdict; a banned key is named as
// banned, with the rest of the ban and no remaining of a counter that
// is not what refuses it.
func TestExplainSeesCapsAndBans(t *testing.T) {
	arrived := make(chan struct{})
	release := map[string]chan struct{}{"/export/slow": make(chan struct{}), "/reports/slow": make(chan struct{})}
	var once [2]sync.Once
	free := func(path string, i int) { once[i].Do(func() { close(release[path]) }) }
	// Never leave the upstream hanging, even when the test fails.
	defer free("/export/slow", 0)
	defer free("/reports/slow", 1)
	h := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
routes:
  - {name: reports, path: "/reports/{rest...}", upstream: api, max_inflight: 1}
  - {name: api, path: /, upstream: api}
rules:
  - {name: shadow-cap, action: count, when: "request.path.startsWith('/export/')", key: [], max_inflight: 1}
  - {name: export-cap, when: "request.path.startsWith('/export/')", limits: [30/1h], max_inflight_per_key: 1}
  - {name: login, when: "request.path == '/login'", limits: [1/1m], ban: 10m}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ch := release[r.URL.Path]; ch != nil {
			arrived <- struct{}{}
			<-ch
		}
	}))
	explain := func(path, ip string) gateway.Explanation {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set("X-Forwarded-For", ip)
		return h.srv.Current().Explain(t.Context(), r)
	}
	rule := func(ex gateway.Explanation, name string) gateway.ExplainedRule {
		for _, r := range ex.Rules {
			if r.Name == name {
				return r
			}
		}
		t.Fatalf("explain has no rule %s: %+v", name, ex)
		return gateway.ExplainedRule{}
	}
	num := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	hold := func(path string) chan int {
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest("GET", h.gw.URL+path, nil)
			req.Header.Set("X-Forwarded-For", "203.0.113.1")
			resp, err := h.client.Do(req)
			if err != nil {
				done <- -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-arrived // the request holds its slots at the upstream
		return done
	}

	ex := explain("/export/a", "203.0.113.1")
	if r := rule(ex, "export-cap"); r.Decision != "allowed" || num(r.InFlightPerKey) != int64(0) || ex.Verdict != "forward to upstream api" {
		t.Errorf("nothing in flight: export-cap %s, in flight %v, verdict %q; want allowed, 0, forward", r.Decision, num(r.InFlightPerKey), ex.Verdict)
	}

	first := hold("/export/slow")
	ex = explain("/export/a", "203.0.113.1")
	if r := rule(ex, "shadow-cap"); r.Decision != "would_block" || num(r.InFlight) != int64(1) {
		t.Errorf("shadow-cap with its cap full: %s, in flight %v; want would_block, 1", r.Decision, num(r.InFlight))
	}
	r := rule(ex, "export-cap")
	if r.Decision != "unavailable" || num(r.InFlightPerKey) != int64(1) || num(r.RetryAfter) != int64(10) || num(r.Remaining) != int64(29) {
		t.Errorf("export-cap with this key's cap full: %s, in flight %v, Retry-After %v, remaining %v; want unavailable, 1, 10, 29",
			r.Decision, num(r.InFlightPerKey), num(r.RetryAfter), num(r.Remaining))
	}
	if want := "503 by rule export-cap (its concurrency cap is full)"; ex.Verdict != want {
		t.Errorf("verdict with the cap full: %q, want %q", ex.Verdict, want)
	}
	var text bytes.Buffer
	ex.WriteText(&text)
	if want := "in flight at most 1 per key (1 now), remaining 29, Retry-After 10s"; !strings.Contains(text.String(), want) {
		t.Errorf("explain's text lacks %q:\n%s", want, text.String())
	}
	if resp, _ := h.do("GET", "/export/b", "203.0.113.1"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the request explained: %d, want 503 as explain said", resp.StatusCode)
	}
	ex = explain("/export/a", "203.0.113.2")
	if r := rule(ex, "export-cap"); r.Decision != "allowed" || num(r.InFlightPerKey) != int64(0) || ex.Verdict != "forward to upstream api" {
		t.Errorf("another client: export-cap %s, in flight %v, verdict %q; want allowed, 0, forward", r.Decision, num(r.InFlightPerKey), ex.Verdict)
	}
	free("/export/slow", 0)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the request holding the slots: %d, want 200", code)
	}

	held := hold("/reports/slow")
	if ex, want := explain("/reports/x", "203.0.113.2"), "503: route reports has 1 requests in flight, its max_inflight"; ex.Verdict != want {
		t.Errorf("route cap full: verdict %q, want %q", ex.Verdict, want)
	}
	if resp, _ := h.do("GET", "/reports/x", "203.0.113.2"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("the request explained: %d, want 503 as explain said", resp.StatusCode)
	}
	free("/reports/slow", 1)
	<-held

	for range 2 {
		h.do("GET", "/login", "203.0.113.3") // the second is refused, and the ban begins
	}
	h.clock.Add(2 * time.Minute) // the 1-minute window has room again
	ex = explain("/login", "203.0.113.3")
	r = rule(ex, "login")
	if r.Decision != "blocked" || !r.Banned || r.Remaining != nil || num(r.RetryAfter) != int64(480) || ex.Verdict != "429 by rule login" {
		t.Errorf("banned: %s, banned %v, remaining %v, Retry-After %v, verdict %q; want blocked, true, none, 480, 429 by rule login",
			r.Decision, r.Banned, num(r.Remaining), num(r.RetryAfter), ex.Verdict)
	}
	text.Reset()
	ex.WriteText(&text)
	if !strings.Contains(text.String(), "limit 1/1m, banned, Retry-After 480s") {
		t.Errorf("explain's text does not say banned:\n%s", text.String())
	}
}

// TestExplainBudgetUnderOneUnit: an upstream_seconds budget with less
// than a second left, but some left, still admits a request (it is
// counted in milliseconds); explain says so too, as the request then
// gets: allowed, with 0 whole seconds remaining.
func TestExplainBudgetUnderOneUnit(t *testing.T) {
	var h *costHarness
	h = newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: budget, cost: upstream_seconds, limits: [10/1h]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.clock.Add(9500 * time.Millisecond)
	}))
	const ip = "203.0.113.1"
	if resp, _ := h.do("GET", "/build", ip); resp.StatusCode != http.StatusOK {
		t.Fatalf("first build: %d, want 200", resp.StatusCode)
	}
	r := httptest.NewRequest("GET", "/build", nil)
	r.RemoteAddr = "127.0.0.1:1"
	r.Header.Set("X-Forwarded-For", ip)
	ex := h.srv.Current().Explain(t.Context(), r)
	if len(ex.Rules) != 1 {
		t.Fatalf("explain: %+v, want one rule", ex)
	}
	got := ex.Rules[0]
	if got.Decision != "allowed" || got.Remaining == nil || *got.Remaining != 0 || got.RetryAfter != nil {
		t.Errorf("explain with 0.5 s of budget left: decision %q remaining %v retry_after_s %v, want allowed, 0, none; verdict %q",
			got.Decision, got.Remaining, got.RetryAfter, ex.Verdict)
	}
	if resp, _ := h.do("GET", "/build", ip); resp.StatusCode != http.StatusOK {
		t.Errorf("second build with 0.5 s of budget left: %d, want 200", resp.StatusCode)
	}
}
