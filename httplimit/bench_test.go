package httplimit_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// discard is a ResponseWriter that keeps nothing but a header map that the
// benchmark clears between requests, so that the benchmark measures the
// middleware rather than a recorder.
type discard struct {
	h    http.Header
	code int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(b []byte) (int, error) { return len(b), nil }
func (w *discard) WriteHeader(code int)        { w.code = code }

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

// hugeLimit never refuses during a benchmark.
var hugeLimit = []ratelimit.Limit{{Count: ratelimit.MaxWindowCount, Window: ratelimit.MaxWindow}}

func benchRule(b *testing.B, o httplimit.Options, key httplimit.Key) *httplimit.Rule {
	b.Helper()
	l := mustNew(b, memory.New(memory.Options{}), o)
	return mustRule(b, l, httplimit.RuleSpec{Name: "bench", Limits: hugeLimit, Key: key})
}

// serveParallel serves the request that newReq builds, from every
// goroutine, b.N times in all; every request must get want.
func serveParallel(b *testing.B, h http.Handler, newReq func() *http.Request, want int) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req := newReq()
		w := &discard{h: http.Header{}}
		ran := false
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, req)
			ran = true
		}
		if ran && w.code != want {
			b.Errorf("status %d, want %d", w.code, want)
		}
	})
}

func ipRequest() *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "198.51.100.7:41000"
	return r
}

func userRequest() *http.Request {
	return request{user: "alice"}.build()
}

// BenchmarkHandler is the handler alone: the reference for the others.
func BenchmarkHandler(b *testing.B) { serveParallel(b, okHandler, ipRequest, 204) }

// BenchmarkWrapIP is one hot client key by IP, admitted, with the
// RateLimit fields on the response (the default).
func BenchmarkWrapIP(b *testing.B) {
	serveParallel(b, benchRule(b, httplimit.Options{}, httplimit.ByIP()).Wrap(okHandler), ipRequest, 204)
}

// BenchmarkWrapIPNoFields is BenchmarkWrapIP without RateLimit fields.
func BenchmarkWrapIPNoFields(b *testing.B) {
	serveParallel(b, benchRule(b, httplimit.Options{RateLimitFields: httplimit.FieldsNever}, httplimit.ByIP()).Wrap(okHandler), ipRequest, 204)
}

// BenchmarkWrapIPBehindProxy resolves the client from X-Forwarded-For.
func BenchmarkWrapIPBehindProxy(b *testing.B) {
	r := benchRule(b, httplimit.Options{ClientIP: httplimit.ClientIP{TrustedHops: 2}}, httplimit.ByIP())
	serveParallel(b, r.Wrap(okHandler), func() *http.Request {
		req := ipRequest()
		req.Header.Set("X-Forwarded-For", "192.0.2.1, 203.0.113.50, 10.0.0.2")
		return req
	}, 204)
}

// BenchmarkWrapUser keys by the user in the request's context.
func BenchmarkWrapUser(b *testing.B) {
	serveParallel(b, benchRule(b, httplimit.Options{}, httplimit.ByUser(userFrom)).Wrap(okHandler), userRequest, 204)
}

// BenchmarkWrapRefused is a client over its limit: every request answered 429.
func BenchmarkWrapRefused(b *testing.B) {
	l := mustNew(b, memory.New(memory.Options{}), httplimit.Options{})
	r := mustRule(b, l, httplimit.RuleSpec{Name: "bench", Limits: []ratelimit.Limit{{Count: 1, Window: ratelimit.MaxWindow}}})
	h := r.Wrap(okHandler)
	h.ServeHTTP(&discard{h: http.Header{}}, ipRequest()) // the one admitted
	serveParallel(b, h, ipRequest, 429)
}

// BenchmarkAllow is the direct API.
func BenchmarkAllow(b *testing.B) {
	r := benchRule(b, httplimit.Options{}, httplimit.ByUser(userFrom))
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !r.Allow(ctx, "alice") {
				b.Error("refused")
			}
		}
	})
}

// BenchmarkPeerXTimeRate is the per-IP middleware that Go tutorials
// write with golang.org/x/time/rate: a mutex-guarded map of limiters keyed
// by the peer address, no proxy handling, no headers. It sits here so the
// middleware's cost reads as a ratio.
func BenchmarkPeerXTimeRate(b *testing.B) {
	var (
		mu       sync.Mutex
		limiters = map[string]*rate.Limiter{}
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			ip = r.RemoteAddr
		}
		mu.Lock()
		l, ok := limiters[ip]
		if !ok {
			l = rate.NewLimiter(rate.Every(time.Nanosecond), 1<<30)
			limiters[ip] = l
		}
		mu.Unlock()
		if !l.Allow() {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		okHandler.ServeHTTP(w, r)
	})
	serveParallel(b, h, ipRequest, 204)
}

// TestAllocations is the allocation budget of the hot paths (tailscale's
// habit): an admitted request costs the RateLimit field's value and
// nothing else, the direct API nothing.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items")
	}
	l := mustNew(t, memory.New(memory.Options{}), httplimit.Options{})
	lNoFields := mustNew(t, memory.New(memory.Options{}), httplimit.Options{RateLimitFields: httplimit.FieldsNever})
	byIP := mustRule(t, l, httplimit.RuleSpec{Name: "ip", Limits: hugeLimit}).Wrap(okHandler)
	byIPNoFields := mustRule(t, lNoFields, httplimit.RuleSpec{Name: "ip", Limits: hugeLimit}).Wrap(okHandler)
	byUser := mustRule(t, lNoFields, httplimit.RuleSpec{Name: "user", Limits: hugeLimit, Key: httplimit.ByUser(userFrom)})
	byUserWrap := byUser.Wrap(okHandler)
	ctx := context.Background()
	w := &discard{h: http.Header{}}
	ipReq, userReq := ipRequest(), userRequest()
	tests := []struct {
		name string
		max  float64
		f    func()
	}{
		{"Wrap by IP with RateLimit fields", 2, func() { clear(w.h); byIP.ServeHTTP(w, ipReq) }}, // the field's string and its []string
		{"Wrap by IP", 0, func() { clear(w.h); byIPNoFields.ServeHTTP(w, ipReq) }},
		{"Wrap by user", 0, func() { clear(w.h); byUserWrap.ServeHTTP(w, userReq) }},
		{"Allow", 0, func() { byUser.Allow(ctx, "alice") }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(1000, tt.f); n > tt.max {
			t.Errorf("%s: %v allocs per request, want at most %v", tt.name, n, tt.max)
		}
	}
}
