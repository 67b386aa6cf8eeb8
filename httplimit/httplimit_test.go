package httplimit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// step is one request of a table test and what it should get.
type step struct {
	req     request
	advance time.Duration // clock step before the request
	status  int
	retry   string // Retry-After, "" for none
}

func runSteps(t *testing.T, c *clock, h http.Handler, steps []step) {
	t.Helper()
	for i, s := range steps {
		c.Advance(s.advance)
		rec := serve(h, s.req)
		if rec.Code != s.status || rec.Header().Get("Retry-After") != s.retry {
			t.Errorf("step %d: %+v: got %d, Retry-After %q; want %d, %q\n%s", i, s.req, rec.Code,
				rec.Header().Get("Retry-After"), s.status, s.retry, rec.Body)
		}
	}
}

func TestPerIP(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "per-ip", Limits: []ratelimit.Limit{lim(3, time.Minute)}}) // zero Key: ByIP
	next := &ok{}
	h := r.Wrap(next)
	a := request{remote: "192.0.2.1:1000"}
	a2 := request{remote: "192.0.2.1:2000"} // same address, another connection
	b := request{remote: "[2001:db8:1:2::1]:1000"}
	b2 := request{remote: "[2001:db8:1:2:ffff::9]:1000"} // same /64
	b3 := request{remote: "[2001:db8:1:3::1]:1000"}      // another /64
	runSteps(t, c, h, []step{
		{req: a, status: 200},
		{req: a2, status: 200},
		{req: a, status: 200},
		// Sliding window, from 12:04:00, the start of a window: the 3 weigh
		// 3×(60s−e)/60s at e into the next one, which leaves room for one
		// more at 12:05:20.
		{req: a2, status: 429, retry: "80"},
		{req: b, status: 200},
		{req: b2, status: 200},
		{req: b, status: 200},
		{req: b2, status: 429, retry: "80"},
		{req: b3, status: 200},
		{req: a, advance: 80 * time.Second, status: 200},
	})
	if got, want := next.n.Load(), int64(8); got != want {
		t.Errorf("next served %d requests, want %d", got, want)
	}
}

func TestPerUser(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{
		Name:   "publications",
		Limits: []ratelimit.Limit{lim(2, time.Hour)},
		Key:    httplimit.ByUser(userFrom),
	})
	h := r.Wrap(&ok{})
	alice := request{method: "POST", path: "/score-sets/1/publish", user: "alice"}
	aliceElsewhere := request{method: "POST", path: "/score-sets/1/publish", user: "alice", remote: "198.51.100.7:1"}
	bob := request{method: "POST", path: "/score-sets/2/publish", user: "bob"}
	anon := request{method: "POST", path: "/score-sets/2/publish"}
	runSteps(t, c, h, []step{
		{req: alice, status: 200},
		{req: aliceElsewhere, status: 200},
		// 12:04 is 4 minutes into the window 12:00–13:00; the 2 weigh
		// 2×(60m−e)/60m at e into the next one: room for one at 13:30.
		{req: alice, status: 429, retry: "5160"},
		{req: aliceElsewhere, status: 429, retry: "5160"}, // a user's quota follows the user, not the address
		{req: bob, status: 200},
		{req: bob, status: 200},
		{req: bob, status: 429, retry: "5160"},
		{req: anon, status: 200}, // no user: not counted by this rule
		{req: anon, status: 200},
		{req: anon, status: 200},
		{req: alice, advance: 86 * time.Minute, status: 200},
	})
}

func TestTrustedProxies(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{ClientIP: httplimit.ClientIP{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	}})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "per-ip", Limits: []ratelimit.Limit{lim(1, time.Minute)}})
	h := r.Wrap(&ok{})
	xff := func(v ...string) http.Header { return http.Header{"X-Forwarded-For": v} }
	tests := []struct {
		name   string
		req    request
		client string // what Limiter.ClientIP says
		status int
	}{
		// An untrusted peer writes what it likes: ignored, it is keyed by its own address.
		{"untrusted peer", request{remote: "203.0.113.9:1", header: xff("198.51.100.1")}, "203.0.113.9", 200},
		{"untrusted peer, another forged address", request{remote: "203.0.113.9:2", header: xff("198.51.100.2")}, "203.0.113.9", 429},
		{"untrusted peer, forged trusted chain", request{remote: "203.0.113.9:3", header: xff("198.51.100.3, 10.0.0.7")}, "203.0.113.9", 429},
		// Through the trusted proxy: the rightmost untrusted entry is the client.
		{"via proxy", request{remote: "10.0.0.1:1", header: xff("198.51.100.7")}, "198.51.100.7", 200},
		{"via proxy again", request{remote: "10.0.0.1:2", header: xff("198.51.100.7")}, "198.51.100.7", 429},
		// The client writes an entry of its choice to the left: it cannot pick its own key.
		{"via proxy, client-written entry", request{remote: "10.0.0.1:3", header: xff("192.0.2.200", "198.51.100.7")}, "198.51.100.7", 429},
		{"via two proxies", request{remote: "10.0.0.1:4", header: xff("6.6.6.6, 198.51.100.7, 10.1.1.1")}, "198.51.100.7", 429},
		{"via proxy, another client", request{remote: "10.0.0.1:5", header: xff("198.51.100.8")}, "198.51.100.8", 200},
		// A malformed header falls back to the last good address: the proxy's.
		{"via proxy, malformed", request{remote: "10.0.0.2:1", header: xff("unknown")}, "10.0.0.2", 200},
		// Forwarded is not read when X-Forwarded-For is configured.
		{"via proxy, Forwarded only", request{remote: "10.0.0.3:1", header: http.Header{"Forwarded": {"for=198.51.100.9"}}}, "10.0.0.3", 200},
	}
	for _, tt := range tests {
		req := tt.req.build()
		if got := l.ClientIP(req); got.String() != tt.client {
			t.Errorf("%s: ClientIP = %s, want %s", tt.name, got, tt.client)
		}
		if rec := serve(h, tt.req); rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.status)
		}
	}
}

func TestTrustedHopsAndForwarded(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{ClientIP: httplimit.ClientIP{TrustedHops: 1, Header: "Forwarded"}})
	req := request{remote: "10.9.9.9:1", header: http.Header{"Forwarded": {`for=192.0.2.60;proto=http, for="[2001:db8:cafe::17]:4711"`}}}.build()
	if got, want := l.ClientIP(req), netip.MustParseAddr("2001:db8:cafe::17"); got != want {
		t.Errorf("ClientIP = %s, want %s", got, want)
	}
}

func TestByHeader(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "api-key", Limits: []ratelimit.Limit{lim(1, time.Minute)}, Key: httplimit.ByHeader("x-api-key")})
	h := r.Wrap(&ok{})
	key := func(v ...string) request { return request{header: http.Header{"X-Api-Key": v}} }
	runSteps(t, c, h, []step{
		{req: key("k1"), status: 200},
		{req: key("k1"), status: 429, retry: "120"}, // 1/1m: room again when the window of the first has passed in full
		{req: key("k2"), status: 200},
		{req: key("k1", "k2"), status: 200}, // two lines: "k1,k2", another value
		{req: key(""), status: 200},         // empty: not counted
		{req: key(""), status: 200},
		{req: request{}, status: 200}, // absent: not counted
		{req: request{}, status: 200},
	})
	if got := httplimit.ByHeader("x-api-key").String(); got != "header:x-api-key" {
		t.Errorf("ByHeader.String() = %q", got)
	}
}

func TestGlobalAndFunc(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	global := mustRule(t, l, httplimit.RuleSpec{Name: "all", Limits: []ratelimit.Limit{lim(2, time.Minute)}, Key: httplimit.Global()})
	byOrg := mustRule(t, l, httplimit.RuleSpec{Name: "org", Limits: []ratelimit.Limit{lim(1, time.Minute)},
		Key: httplimit.ByFunc(func(r *http.Request) (string, bool) {
			org := r.URL.Query().Get("org")
			return org, org != ""
		})})
	runSteps(t, c, global.Wrap(&ok{}), []step{
		{req: request{remote: "192.0.2.1:1"}, status: 200},
		{req: request{remote: "192.0.2.2:1"}, status: 200},
		{req: request{remote: "192.0.2.3:1"}, status: 429, retry: "90"},
	})
	runSteps(t, c, byOrg.Wrap(&ok{}), []step{
		{req: request{path: "/?org=a"}, status: 200},
		{req: request{path: "/?org=a"}, status: 429, retry: "120"},
		{req: request{path: "/?org=b"}, status: 200},
		{req: request{path: "/"}, status: 200},
		{req: request{path: "/"}, status: 200},
	})
}

func TestPreflightNotCounted(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "csv", Limits: []ratelimit.Limit{lim(1, time.Minute)}})
	next := &ok{}
	h := r.Wrap(next)
	preflight := request{method: "OPTIONS", header: http.Header{"Access-Control-Request-Method": {"GET"}, "Origin": {"https://mavedb.org"}}}
	runSteps(t, c, h, []step{
		{req: preflight, status: 200},
		{req: preflight, status: 200},
		{req: request{}, status: 200},
		{req: preflight, status: 200}, // over the limit, the preflight still passes
		{req: request{}, status: 429, retry: "120"},
		{req: request{method: "OPTIONS"}, status: 429, retry: "120"}, // a plain OPTIONS is a request like any other
	})
}

// TestChain chains two rules the way chi's r.Use and r.With do, as
// func(http.Handler) http.Handler values: per IP outside, per user inside.
func TestChain(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	perIP := mustRule(t, l, httplimit.RuleSpec{Name: "per-ip", Limits: []ratelimit.Limit{lim(5, time.Minute)}})
	perUser := mustRule(t, l, httplimit.RuleSpec{Name: "per-user", Limits: []ratelimit.Limit{lim(2, time.Minute)}, Key: httplimit.ByUser(userFrom)})

	// chain is chi.Chain(mws...).Handler(h) without chi: the first wraps outermost.
	chain := func(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
		for i := len(mws) - 1; i >= 0; i-- {
			h = mws[i](h)
		}
		return h
	}
	next := &ok{}
	h := chain(next, perIP.Wrap, perUser.Wrap)

	type want struct {
		status int
		fields string // RateLimit
		policy string // RateLimit-Policy
	}
	alice := request{user: "alice"}
	steps := []struct {
		req request
		want
	}{
		// per-ip has 4 left, per-user 1: per-user's fields, the closest.
		// t is ResetAfter: the sliding window is empty again at 12:06.
		{alice, want{200, `"per-user";r=1;t=60`, `"per-user";q=2;w=60`}},
		{alice, want{200, `"per-user";r=0;t=60`, `"per-user";q=2;w=60`}},
		// per-user refuses: per-ip counted it (it came first), per-user did not.
		// On a refusal t is Retry-After.
		{alice, want{429, `"per-user";r=0;t=90`, `"per-user";q=2;w=60`}},
		// Anonymous: only per-ip counts, 1 left after this one.
		{request{}, want{200, `"per-ip";r=1;t=60`, `"per-ip";q=5;w=60`}},
		{request{}, want{200, `"per-ip";r=0;t=60`, `"per-ip";q=5;w=60`}},
		{request{}, want{429, `"per-ip";r=0;t=72`, `"per-ip";q=5;w=60`}},
		// Another user at the same address: per-ip refuses before per-user is asked.
		{request{user: "bob"}, want{429, `"per-ip";r=0;t=72`, `"per-ip";q=5;w=60`}},
	}
	for i, s := range steps {
		rec := serve(h, s.req)
		got := want{rec.Code, rec.Header().Get("RateLimit"), rec.Header().Get("RateLimit-Policy")}
		if got != s.want {
			t.Errorf("step %d (%+v) = %+v, want %+v", i, s.req, got, s.want)
		}
	}
	if got := next.n.Load(); got != 4 {
		t.Errorf("next served %d, want 4", got)
	}
	// bob was not counted by per-user: his quota is whole.
	if d, err := perUser.Take(context.Background(), "bob"); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Errorf(`per-user Take("bob") = %+v, %v; want allowed with 1 remaining`, d, err)
	}
}

// TestDirectAPI checks that Take, Allow and Check count under the same
// counters as the middleware.
func TestDirectAPI(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	ctx := context.Background()
	pub := mustRule(t, l, httplimit.RuleSpec{Name: "publications", Limits: []ratelimit.Limit{lim(3, time.Hour)}, Key: httplimit.ByUser(userFrom)})

	if rec := serve(pub.Wrap(&ok{}), request{user: "alice"}); rec.Code != 200 {
		t.Fatalf("first publication: %d", rec.Code)
	}
	d, err := pub.Take(ctx, "alice")
	// Windows are aligned to the hour: the quota resets when the window
	// 12:00–13:00 ends (the events of it then fade over 13:00–14:00).
	if want := (ratelimit.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Hour - 4*time.Minute}); err != nil || d != want {
		t.Errorf(`Take("alice") = %+v, %v; want %+v`, d, err, want)
	}
	if !pub.Allow(ctx, "alice") {
		t.Errorf(`Allow("alice") = false after 2 of 3`)
	}
	if pub.Allow(ctx, "alice") {
		t.Errorf(`Allow("alice") = true after 3 of 3`)
	}
	d, err = pub.Take(ctx, "alice")
	if err != nil || d.Allowed || d.RetryAfter != time.Hour+16*time.Minute {
		// 12:00–13:00 counts in full until 13:00, then weighs less; one
		// more fits once 3×(1h−e)/1h ≤ 2, at 13:20.
		t.Errorf(`Take("alice") = %+v, %v; want refused, RetryAfter 1h16m`, d, err)
	}
	if rec := serve(pub.Wrap(&ok{}), request{user: "alice"}); rec.Code != 429 || rec.Header().Get("Retry-After") != "4560" {
		t.Errorf("publication after the direct ones: %d, Retry-After %q; want 429, 4560", rec.Code, rec.Header().Get("Retry-After"))
	}

	// Check: the key found by the handler itself.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := r.URL.Query().Get("owner") // e.g. loaded from the database
		if !pub.Check(w, r, owner) {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	if rec := serve(h, request{path: "/?owner=alice"}); rec.Code != 429 {
		t.Errorf("Check(alice) answered %d, want 429", rec.Code)
	}
	rec := serve(h, request{path: "/?owner=bob"})
	if rec.Code != 204 || rec.Header().Get("RateLimit") != `"publications";r=2;t=3360` {
		t.Errorf("Check(bob) answered %d, RateLimit %q; want 204, r=2;t=3360", rec.Code, rec.Header().Get("RateLimit"))
	}
}

func TestConcurrentExact(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "exact", Limits: []ratelimit.Limit{lim(50, time.Hour)}, Key: httplimit.ByUser(userFrom)})
	next := &ok{}
	h := r.Wrap(next)
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if serve(h, request{user: "u"}).Code == 429 {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if next.n.Load() != 50 || refused.Load() != 110 {
		t.Errorf("admitted %d, refused %d; want 50, 110", next.n.Load(), refused.Load())
	}
}

func TestFailurePolicy(t *testing.T) {
	tests := []struct {
		name     string
		opts     httplimit.Options
		spec     httplimit.RuleSpec
		status   int
		retry    string
		reached  bool
		decision ratelimit.Decision // Take's
		outcome  httplimit.Outcome
	}{
		{"fail open by default", httplimit.Options{}, httplimit.RuleSpec{}, 200, "", true,
			ratelimit.Decision{Allowed: true}, httplimit.Allowed},
		{"fail closed per rule", httplimit.Options{}, httplimit.RuleSpec{OnStoreError: httplimit.FailClosed}, 503, "10", false,
			ratelimit.Decision{RetryAfter: 10 * time.Second}, httplimit.Blocked},
		{"fail closed by default", httplimit.Options{OnStoreError: httplimit.FailClosed, FailClosedRetryAfter: 1500 * time.Millisecond}, httplimit.RuleSpec{}, 503, "2", false,
			ratelimit.Decision{RetryAfter: 1500 * time.Millisecond}, httplimit.Blocked},
		{"rule fails open against the default", httplimit.Options{OnStoreError: httplimit.FailClosed}, httplimit.RuleSpec{OnStoreError: httplimit.FailOpen}, 200, "", true,
			ratelimit.Decision{Allowed: true}, httplimit.Allowed},
		{"fixed retry-after wins", httplimit.Options{}, httplimit.RuleSpec{OnStoreError: httplimit.FailClosed, RetryAfter: 300 * time.Second}, 503, "300", false,
			ratelimit.Decision{RetryAfter: 10 * time.Second}, httplimit.Blocked},
		{"fail closed in shadow", httplimit.Options{}, httplimit.RuleSpec{OnStoreError: httplimit.FailClosed, Shadow: true}, 200, "", true,
			ratelimit.Decision{Allowed: true}, httplimit.WouldBlock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []httplimit.Event
			tt.opts.Observe = func(e httplimit.Event) { events = append(events, e) }
			var logs bytes.Buffer
			tt.opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			store := &errStore{}
			l := mustNew(t, store, tt.opts)
			tt.spec.Name, tt.spec.Limits = "r", []ratelimit.Limit{lim(10, time.Minute)}
			r := mustRule(t, l, tt.spec)
			next := &ok{}
			rec := serve(r.Wrap(next), request{header: http.Header{"Accept": {"application/json"}}})
			if rec.Code != tt.status || rec.Header().Get("Retry-After") != tt.retry || (next.n.Load() == 1) != tt.reached {
				t.Errorf("answered %d, Retry-After %q, reached next %v; want %d, %q, %v", rec.Code,
					rec.Header().Get("Retry-After"), next.n.Load() == 1, tt.status, tt.retry, tt.reached)
			}
			if rec.Code == 503 && !strings.Contains(rec.Body.String(), "temporary-reduced-capacity") {
				t.Errorf("503 body is not a temporary-reduced-capacity problem: %s", rec.Body)
			}
			d, err := r.Take(context.Background(), "k")
			if !errors.Is(err, errDown) || d != tt.decision {
				t.Errorf("Take = %+v, %v; want %+v and an error wrapping %v", d, err, tt.decision, errDown)
			}
			if len(events) != 2 || events[0].Outcome != tt.outcome || !errors.Is(events[0].Err, errDown) {
				t.Errorf("events = %+v, want two %s with the store error", events, tt.outcome)
			}
			// Two failures, one log line: store errors are logged at most once a second per rule.
			if n := strings.Count(logs.String(), `"msg":"store failed"`); n != 1 {
				t.Errorf("logged %d store failures, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// TestStoreTimeout checks that a store that does not answer costs
// StoreTimeout, not a hang, and is decided by the failure policy.
func TestStoreTimeout(t *testing.T) {
	l := mustNew(t, hangStore{}, httplimit.Options{StoreTimeout: 20 * time.Millisecond})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "r", Limits: []ratelimit.Limit{lim(1, time.Minute)}})
	start := time.Now()
	d, err := r.Take(context.Background(), "k")
	if !errors.Is(err, context.DeadlineExceeded) || !d.Allowed {
		t.Errorf("Take = %+v, %v; want allowed (fail open) and context.DeadlineExceeded", d, err)
	}
	if rec := serve(r.Wrap(&ok{}), request{}); rec.Code != 200 {
		t.Errorf("answered %d, want 200 (fail open)", rec.Code)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("two decisions took %v", el)
	}
}

func TestShadow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   httplimit.Options
		shadow bool
		fields string // RateLimit on the first, admitted, response
		action string // in the log, as the gateway's
	}{
		{"rule", httplimit.Options{}, true, "", "count"}, // a count rule advertises nothing
		{"log-only", httplimit.Options{LogOnly: true}, false, `"r";r=0;t=60`, "block"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			var outcomes []string
			tt.opts.Observe = func(e httplimit.Event) { outcomes = append(outcomes, e.Outcome.String()) }
			var logs bytes.Buffer
			tt.opts.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			l := mustNew(t, newMemory(c), tt.opts)
			r := mustRule(t, l, httplimit.RuleSpec{Name: "r", Limits: []ratelimit.Limit{lim(1, time.Minute)}, Shadow: tt.shadow})
			next := &ok{}
			h := r.Wrap(next)
			if rec := serve(h, request{}); rec.Code != 200 || rec.Header().Get("RateLimit") != tt.fields {
				t.Errorf("first: %d, RateLimit %q; want 200, %q", rec.Code, rec.Header().Get("RateLimit"), tt.fields)
			}
			if rec := serve(h, request{}); rec.Code != 200 || rec.Header().Get("RateLimit") != "" || rec.Header().Get("Retry-After") != "" {
				t.Errorf("second: %d, %v; want 200 without RateLimit or Retry-After", rec.Code, rec.Header())
			}
			if d, err := r.Take(context.Background(), "192.0.2.1"); err != nil || !d.Allowed || d.RetryAfter != 0 {
				t.Errorf("Take = %+v, %v; want allowed", d, err)
			}
			if want := []string{"allowed", "would_block", "would_block"}; !cmp.Equal(outcomes, want) {
				t.Errorf("outcomes = %q, want %q", outcomes, want)
			}
			if next.n.Load() != 2 {
				t.Errorf("next served %d, want 2", next.n.Load())
			}
			log := logs.String()
			if !strings.Contains(log, `"decision":"would_block"`) || !strings.Contains(log, `"action":"`+tt.action+`"`) ||
				!strings.Contains(log, `"key_type":"ip"`) || strings.Contains(log, "192.0.2.1") {
				t.Errorf("log lacks the would-block, or shows the client's address:\n%s", log)
			}
		})
	}
}

func TestRateLimitFieldsOption(t *testing.T) {
	for _, tt := range []struct {
		fields          httplimit.RateLimitFields
		admitted, label string
		refused         bool
	}{
		{httplimit.FieldsAlways, `"r";r=1;t=60`, "always", true},
		{httplimit.FieldsOnRefusal, "", "on refusal", true},
		{httplimit.FieldsNever, "", "never", false},
	} {
		c := newClock()
		l := mustNew(t, newMemory(c), httplimit.Options{RateLimitFields: tt.fields})
		r := mustRule(t, l, httplimit.RuleSpec{Name: "r", Limits: []ratelimit.Limit{lim(2, time.Minute)}})
		h := r.Wrap(&ok{})
		if got := serve(h, request{}).Header().Get("RateLimit"); got != tt.admitted {
			t.Errorf("%s: admitted RateLimit %q, want %q", tt.label, got, tt.admitted)
		}
		serve(h, request{})
		rec := serve(h, request{})
		if got := rec.Header().Get("RateLimit") != "" && rec.Header().Get("RateLimit-Policy") != ""; rec.Code != 429 || got != tt.refused {
			t.Errorf("%s: refused %d with fields %v, want 429 with %v", tt.label, rec.Code, got, tt.refused)
		}
	}
}

func TestNewErrors(t *testing.T) {
	good := []ratelimit.Limit{lim(1, time.Minute)}
	_, err := httplimit.New(nil, httplimit.Options{
		ClientIP:             httplimit.ClientIP{TrustedHops: 1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "X-Real-IP"},
		CORS:                 httplimit.CORS{AllowOrigins: []string{"mavedb.org"}},
		DefaultLanguage:      "fr",
		OnStoreError:         7,
		FailClosedRetryAfter: -time.Second,
	})
	for _, want := range []string{"store is nil", "exclusive", "X-Real-IP", "mavedb.org", `"fr"`, "OnStoreError", "negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New error %v does not mention %q", err, want)
		}
	}

	// A nil pointer in the interface (a store variable left unset) is as
	// nil as a nil interface: refused, not a panic on the first request.
	var unset *memory.Store
	if _, err := httplimit.New(unset, httplimit.Options{}); err == nil || !strings.Contains(err.Error(), "store is a nil *memory.Store") {
		t.Errorf("New((*memory.Store)(nil)) = %v, want an error saying the store is nil", err)
	}

	l := mustNew(t, newMemory(newClock()), httplimit.Options{})
	mustRule(t, l, httplimit.RuleSpec{Name: "taken", Limits: good})
	tests := []struct {
		spec httplimit.RuleSpec
		want []string
	}{
		{httplimit.RuleSpec{}, []string{`httplimit: rule "": name is required`, `httplimit: rule "": no limits`}},
		{httplimit.RuleSpec{Name: "taken", Limits: good}, []string{`"taken"`, "already used"}},
		{httplimit.RuleSpec{Name: "é", Limits: good}, []string{"printable ASCII"}},
		{httplimit.RuleSpec{Name: "r", Limits: []ratelimit.Limit{{Count: 0, Window: time.Minute}}}, []string{"limit 0", "must be positive"}},
		{httplimit.RuleSpec{Name: "r", Limits: []ratelimit.Limit{lim(1, time.Minute), {Count: 5, Window: time.Minute, Algorithm: ratelimit.GCRA}}}, []string{"limits 0 and 1 have the same window 1m"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByUser(nil)}, []string{"key ByUser has no user function"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByFunc(nil)}, []string{"key ByFunc has no function"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByHeader("")}, []string{"key ByHeader has no header name"}},
		// Names a request never carries would leave the rule counting nothing.
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByHeader("X-Api-Key ")}, []string{`key ByHeader("X-Api-Key "): not a header field name`}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByHeader("X-Api-Key:")}, []string{"not a header field name"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByHeader("host")}, []string{`key ByHeader("Host")`, "Request.Host", "ByFunc"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Key: httplimit.ByHeader("Transfer-Encoding")}, []string{"Request.TransferEncoding"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, RetryAfter: -time.Second}, []string{"RetryAfter -1s is negative"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, Message: map[string]string{"en": "{bogus}"}}, []string{"bogus"}},
		{httplimit.RuleSpec{Name: "r", Limits: good, OnStoreError: 9}, []string{"OnStoreError"}},
	}
	for _, tt := range tests {
		_, err := l.NewRule(tt.spec)
		for _, want := range tt.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("NewRule(%+v) = %v, want an error mentioning %q", tt.spec, err, want)
			}
		}
	}
	// A refused spec does not take its name.
	mustRule(t, l, httplimit.RuleSpec{Name: "r", Limits: good})
}

func TestWarningsLogged(t *testing.T) {
	var logs bytes.Buffer
	mustNew(t, newMemory(newClock()), httplimit.Options{
		ClientIP: httplimit.ClientIP{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}},
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if !strings.Contains(logs.String(), "every client can pick its own rate-limiting key") {
		t.Errorf("no warning about trusting 0.0.0.0/0:\n%s", logs.String())
	}
}

func TestOutcomeAndPolicyNames(t *testing.T) {
	got := []string{httplimit.Allowed.String(), httplimit.Blocked.String(), httplimit.WouldBlock.String(), httplimit.Outcome(9).String(),
		httplimit.FailurePolicy(0).String(), httplimit.FailOpen.String(), httplimit.FailClosed.String(),
		httplimit.ByIP().String(), httplimit.Key{}.String(), httplimit.ByUser(userFrom).String(), httplimit.Global().String()}
	want := []string{"allowed", "blocked", "would_block", "Outcome(9)", "default", "fail_open", "fail_closed", "ip", "ip", "user", "global"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("names (-got +want):\n%s", diff)
	}
}

// TestEmptyKeyValueIsOneCounter: a key function that returns an empty
// value counts those requests under one counter, as documented: a lost ID
// shares a limit rather than escaping it.
func TestEmptyKeyValueIsOneCounter(t *testing.T) {
	l := mustNew(t, memory.New(memory.Options{}), httplimit.Options{})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "per-org", Limits: []ratelimit.Limit{lim(2, time.Hour)},
		Key: httplimit.ByFunc(func(*http.Request) (string, bool) { return "", true })})
	h := r.Wrap(&ok{})
	var codes []int
	for _, remote := range []string{"198.51.100.1:1234", "198.51.100.2:1234", "198.51.100.3:1234"} {
		codes = append(codes, serve(h, request{remote: remote}).Code)
	}
	if !cmp.Equal(codes, []int{200, 200, 429}) {
		t.Errorf("three clients with an empty key: %v, want 200 200 429 (one counter)", codes)
	}
}
