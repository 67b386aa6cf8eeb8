package httplimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/internal/redistest"
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

// TestClientGoneIsCounted: a request whose client has already left (its
// context canceled, as net/http does when the connection closes) is
// decided and counted like any other by a remote store, as the memory
// store does. Otherwise a client that closes its connection as soon as it
// has sent a request would skip the quota under FailOpen while the
// handler still ran, and each such request would be logged as a store
// failure.
func TestClientGoneIsCounted(t *testing.T) {
	srv := redistest.Start(t)
	store, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr()}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var storeErrs []error
	var logs bytes.Buffer
	l := mustNew(t, store, httplimit.Options{
		StoreTimeout: 5 * time.Second,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
		Observe: func(e httplimit.Event) {
			if e.Err != nil {
				storeErrs = append(storeErrs, e.Err)
			}
		},
	})
	r := mustRule(t, l, httplimit.RuleSpec{Name: "per-ip", Limits: []ratelimit.Limit{lim(2, time.Hour)}})
	next := &ok{}
	h := r.Wrap(next)

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 2 {
		req := request{}.build().WithContext(gone)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Header().Get("RateLimit") == "" {
			t.Errorf("request %d of a client that left: %d, RateLimit %q; want 200 with the fields of a counted request", i, rec.Code, rec.Header().Get("RateLimit"))
		}
	}
	if rec := serve(h, request{}); rec.Code != http.StatusTooManyRequests {
		t.Errorf("third request: %d, want 429: the two of the client that left were not counted", rec.Code)
	}
	if n := next.n.Load(); n != 2 {
		t.Errorf("next served %d requests, want 2", n)
	}
	if len(storeErrs) != 0 || strings.Contains(logs.String(), "store failed") {
		t.Errorf("store errors %v, logs:\n%s\nwant none: the store did not fail", storeErrs, logs.String())
	}

	// Check decides the same way.
	req := request{}.build().WithContext(gone)
	req.RemoteAddr = "198.51.100.1:1234"
	for i, want := range []bool{true, true, false} {
		if got := r.Check(httptest.NewRecorder(), req, "198.51.100.1"); got != want {
			t.Errorf("Check %d with the client gone = %v, want %v", i, got, want)
		}
	}
}
