package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// A per-user quota on one route of an http.ServeMux: at most 20 score set
// publications per user per hour.
func Example() {
	// A clock for the example; leave Now out to use the system clock.
	now := time.Date(2026, 9, 28, 12, 0, 0, 0, time.UTC)
	store := memory.New(memory.Options{Now: func() time.Time { return now }})

	l, err := httplimit.New(store, httplimit.Options{})
	if err != nil {
		panic(err)
	}
	publications, err := l.NewRule(httplimit.RuleSpec{
		Name:   "score-set-publications",
		Limits: []ratelimit.Limit{{Count: 20, Window: time.Hour}},
		Key:    httplimit.ByUser(userFromContext), // set by the authentication middleware
	})
	if err != nil {
		panic(err)
	}

	mux := http.NewServeMux()
	mux.Handle("POST /score-sets/{id}/publish", publications.Wrap(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "published %s\n", r.PathValue("id"))
		})))
	handler := authenticate(mux)

	publish := func(user string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/score-sets/urn:mavedb:00000053-a-1/publish", nil)
		req.Header.Set("X-User", user)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	for range 20 {
		publish("alice")
	}
	rec := publish("alice") // the 21st in the hour
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))
	fmt.Println("RateLimit-Policy:", rec.Header().Get("RateLimit-Policy"))
	fmt.Println("RateLimit:", rec.Header().Get("RateLimit"))

	rec = publish("bob") // another user is not affected
	fmt.Print(rec.Code, " ", rec.Body)
	fmt.Println("RateLimit:", rec.Header().Get("RateLimit"))
	// Output:
	// 429 Retry-After: 3780
	// RateLimit-Policy: "score-set-publications";q=20;w=3600
	// RateLimit: "score-set-publications";r=0;t=3780
	// 200 published urn:mavedb:00000053-a-1
	// RateLimit: "score-set-publications";r=19;t=3600
}

type exampleUserKey struct{}

// userFromContext returns the user that authenticate put in the context.
func userFromContext(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(exampleUserKey{}).(string)
	return u, ok
}

// authenticate stands for the application's authentication middleware.
// It trusts an X-User header, which is fine for an example only.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(context.WithValue(r.Context(), exampleUserKey{}, u))
		}
		next.ServeHTTP(w, r)
	})
}

// The direct API, for an operation that is not an HTTP request: may user U
// publish another score set? It counts under the same counters as the
// rule's middleware.
func ExampleRule_Allow() {
	now := time.Date(2026, 9, 28, 12, 0, 0, 0, time.UTC)
	l, _ := httplimit.New(memory.New(memory.Options{Now: func() time.Time { return now }}), httplimit.Options{})
	publications, _ := l.NewRule(httplimit.RuleSpec{
		Name:   "score-set-publications",
		Limits: []ratelimit.Limit{{Count: 2, Window: time.Hour}},
		Key:    httplimit.ByUser(userFromContext),
	})
	ctx := context.Background()
	for _, user := range []string{"alice", "alice", "alice", "bob"} {
		fmt.Println(user, publications.Allow(ctx, user))
	}

	// Take says how long to wait.
	d, err := publications.Take(ctx, "alice")
	fmt.Printf("allowed=%v retry after %v, err=%v\n", d.Allowed, d.RetryAfter, err)
	// Output:
	// alice true
	// alice true
	// alice false
	// bob true
	// allowed=false retry after 1h30m0s, err=<nil>
}

// Behind a load balancer: the client address comes from X-Forwarded-For,
// but only when the request came through the trusted proxies.
func ExampleByIP() {
	l, _ := httplimit.New(memory.New(memory.Options{}), httplimit.Options{
		ClientIP: httplimit.ClientIP{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		},
	})
	perIP, _ := l.NewRule(httplimit.RuleSpec{
		Name:   "rate-limit-ip",
		Limits: []ratelimit.Limit{{Count: 1500, Window: 5 * time.Minute}},
		Key:    httplimit.ByIP(),
	})
	_ = perIP // mux.Handle("/", perIP.Wrap(api))

	viaProxy := httptest.NewRequest("GET", "/", nil)
	viaProxy.RemoteAddr = "10.0.3.4:40000"
	viaProxy.Header.Set("X-Forwarded-For", "192.0.2.55, 198.51.100.7") // the client wrote the first entry
	fmt.Println(l.ClientIP(viaProxy))

	direct := httptest.NewRequest("GET", "/", nil)
	direct.RemoteAddr = "203.0.113.9:50000"
	direct.Header.Set("X-Forwarded-For", "198.51.100.7") // forged: not from a trusted proxy
	fmt.Println(l.ClientIP(direct))
	// Output:
	// 198.51.100.7
	// 203.0.113.9
}

// Rules chain as func(http.Handler) http.Handler, as with chi's r.Use and
// r.With: a per-IP limit for everyone, then a per-user quota.
func ExampleRule_Wrap() {
	l, _ := httplimit.New(memory.New(memory.Options{}), httplimit.Options{})
	perIP, _ := l.NewRule(httplimit.RuleSpec{
		Name:   "rate-limit-ip",
		Limits: []ratelimit.Limit{{Count: 1500, Window: 5 * time.Minute}},
	})
	perUser, _ := l.NewRule(httplimit.RuleSpec{
		Name:   "score-set-publications",
		Limits: []ratelimit.Limit{{Count: 20, Window: time.Hour}},
		Key:    httplimit.ByUser(userFromContext),
	})
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })

	// With chi: r.Use(perIP.Wrap); r.With(perUser.Wrap).Post("/score-sets/{id}/publish", api)
	h := perIP.Wrap(authenticate(perUser.Wrap(api)))

	req := httptest.NewRequest("POST", "/score-sets/1/publish", nil)
	req.Header.Set("X-User", "alice")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body)
	// Output:
	// 200 ok
}
