package httplimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// t0 is the instant tests start at: 12:04:00, as in the worked example of
// ratelimit.Limit.Take.
var t0 = time.Date(2026, 9, 28, 12, 4, 0, 0, time.UTC)

// A clock is a settable clock for the memory store, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := new(clock)
	c.ns.Store(t0.UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

func newMemory(c *clock) *memory.Store { return memory.New(memory.Options{Now: c.Now}) }

func mustNew(t testing.TB, s ratelimit.Store, o httplimit.Options) *httplimit.Limiter {
	t.Helper()
	l, err := httplimit.New(s, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func mustRule(t testing.TB, l *httplimit.Limiter, spec httplimit.RuleSpec) *httplimit.Rule {
	t.Helper()
	r, err := l.NewRule(spec)
	if err != nil {
		t.Fatalf("NewRule(%q): %v", spec.Name, err)
	}
	return r
}

func lim(count int64, window time.Duration) ratelimit.Limit {
	return ratelimit.Limit{Count: count, Window: window}
}

// ok is the handler behind the middleware: it answers 200 "ok" and counts
// the requests that reached it.
type ok struct{ n atomic.Int64 }

func (h *ok) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.n.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// request describes one test request.
type request struct {
	method, path string
	remote       string // RemoteAddr; default 192.0.2.1:1234
	header       http.Header
	user         string // set in the context by a pretend auth middleware
}

type userKey struct{}

// userFrom is the ByUser function of the tests.
func userFrom(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok && u != ""
}

func (rq request) build() *http.Request {
	method, path := rq.method, rq.path
	if method == "" {
		method = http.MethodGet
	}
	if path == "" {
		path = "/"
	}
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "192.0.2.1:1234"
	if rq.remote != "" {
		r.RemoteAddr = rq.remote
	}
	for k, v := range rq.header {
		r.Header[k] = v
	}
	if rq.user != "" {
		r = r.WithContext(context.WithValue(r.Context(), userKey{}, rq.user))
	}
	return r
}

func serve(h http.Handler, rq request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, rq.build())
	return rec
}

// errStore is a store that always fails, as a store whose server is gone.
type errStore struct{ calls atomic.Int64 }

var errDown = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func (s *errStore) Take(context.Context, string, int64, ...ratelimit.Limit) (ratelimit.Decision, error) {
	s.calls.Add(1)
	return ratelimit.Decision{}, errDown
}

// hangStore is a store that never answers: it waits for its context.
type hangStore struct{}

func (hangStore) Take(ctx context.Context, _ string, _ int64, _ ...ratelimit.Limit) (ratelimit.Decision, error) {
	<-ctx.Done()
	return ratelimit.Decision{}, ctx.Err()
}
