package httplimit_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// deadRedis returns a Redis store pointed at a loopback port where nothing
// listens: a real failure (connection refused), no mock.
func deadRedis(t *testing.T) *redisstore.Store {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s, err := redisstore.New(redisstore.Options{Addrs: []string{addr}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDeadRedis: with the Redis store's server gone, a fail-open rule lets
// every request through and a fail-closed one answers 503 with
// Retry-After; none waits more than the timeouts, none is a 500.
func TestDeadRedis(t *testing.T) {
	store := deadRedis(t)
	var errs int
	l := mustNew(t, store, httplimit.Options{
		StoreTimeout: 200 * time.Millisecond,
		Observe: func(e httplimit.Event) {
			if e.Err != nil {
				errs++
			}
		},
	})
	open := mustRule(t, l, httplimit.RuleSpec{Name: "open", Limits: []ratelimit.Limit{lim(1, time.Minute)}})
	closed := mustRule(t, l, httplimit.RuleSpec{Name: "closed", Limits: []ratelimit.Limit{lim(1, time.Minute)}, OnStoreError: httplimit.FailClosed})

	const n = 20
	for _, tt := range []struct {
		rule   *httplimit.Rule
		status int
		retry  string
	}{
		{open, http.StatusOK, ""},
		{closed, http.StatusServiceUnavailable, "10"},
	} {
		next := &ok{}
		h := tt.rule.Wrap(next)
		start := time.Now()
		for i := range n {
			rec := serve(h, request{header: http.Header{"Accept": {"application/problem+json"}}})
			if rec.Code != tt.status || rec.Header().Get("Retry-After") != tt.retry {
				t.Fatalf("%s, request %d: %d, Retry-After %q; want %d, %q\n%s", tt.rule.Name(), i, rec.Code,
					rec.Header().Get("Retry-After"), tt.status, tt.retry, rec.Body)
			}
		}
		// Each decision waits at most the store's timeout (50ms), and
		// mostly not at all: the store fails fast while Redis is known
		// to be down. 20 decisions in 2s leaves room for a slow machine.
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("%s: %d requests took %v", tt.rule.Name(), n, el)
		}
		if reached := next.n.Load(); reached != 0 && tt.status != http.StatusOK || reached != n && tt.status == http.StatusOK {
			t.Errorf("%s: next served %d of %d", tt.rule.Name(), reached, n)
		}
	}
	if errs != 2*n {
		t.Errorf("Observe saw %d store errors, want %d", errs, 2*n)
	}

	// The direct API: the failure policy's decision, and the error.
	d, err := open.Take(context.Background(), "alice")
	if err == nil || !d.Allowed {
		t.Errorf("open.Take = %+v, %v; want allowed and an error", d, err)
	}
	d, err = closed.Take(context.Background(), "alice")
	if err == nil || d.Allowed || d.RetryAfter != httplimit.DefaultFailClosedRetryAfter {
		t.Errorf("closed.Take = %+v, %v; want refused for %v and an error", d, err, httplimit.DefaultFailClosedRetryAfter)
	}
}
