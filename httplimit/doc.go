// Package httplimit provides floodgate's limits inside a Go application:
// net/http middleware, and a direct API for operations that are not HTTP
// requests. It is for limits that only the application can key
// or place, such as "at most 20 score set publications per user per hour":
// the user is known after authentication, and the operation may be one
// handler among many.
//
// It uses the same pieces as the floodgate gateway: the algorithms and
// stores of package ratelimit (ratelimit/memory, or ratelimit/redisstore
// when several processes must share counters), the gateway's client
// address logic behind trusted proxies, and the gateway's answers, byte
// for byte: 429 or 503 with Retry-After, the RateLimit-Policy and
// RateLimit fields, and an application/problem+json, HTML or plain-text
// body chosen by Accept. It imports the standard library only.
//
// # Use
//
// Make one Limiter per store with New, then one Rule per limit with
// Limiter.NewRule, at startup. A Rule is a name, one or more limits and a
// Key that says what a request is counted by:
//
//	l, err := httplimit.New(store, httplimit.Options{})
//	publish, err := l.NewRule(httplimit.RuleSpec{
//		Name:   "score-set-publications",
//		Limits: []ratelimit.Limit{{Count: 20, Window: time.Hour}},
//		Key:    httplimit.ByUser(auth.UserID),
//	})
//	mux.Handle("POST /score-sets/{id}/publish", publish.Wrap(publishHandler))
//
// Rule.Wrap has the shape func(http.Handler) http.Handler, so it works with
// http.ServeMux, chi (r.Use(publish.Wrap), r.With(publish.Wrap)) and any
// other middleware chain. A rule's counter belongs to the rule, however
// many handlers it wraps: wrap two routes with one Rule to give them one
// quota.
//
// For an operation that is not a request, or a handler that knows the key
// only after some work, Rule.Take and Rule.Allow count one event under a
// key and say whether it may go ahead, and Rule.Check does the same and
// writes the refusal:
//
//	if !publish.Allow(ctx, userID) { return errTooManyPublications }
//
// The key given to these is the value the rule's Key would find in a
// request (the user ID, the client address), so they share the
// middleware's counters.
//
// # Decisions
//
// For each request, Wrap asks the rule's Key for a value. A Key that finds
// none (ByUser on an anonymous request, ByHeader without the header) leaves
// the request to the next handler uncounted; chain a per-IP rule in front
// of a per-user one to limit anonymous clients too. CORS preflights
// (OPTIONS with Access-Control-Request-Method) are never counted: MaveDB
// found that counting them blocked the preflights of logged-in users'
// requests once the limit tripped.
//
// Otherwise the request is counted as one event under every limit of the
// rule, all or nothing (ratelimit.Store.Take), and:
//
//   - within the limits, it goes to the next handler, with the RateLimit
//     fields of the rule on its response (unless Options.RateLimitFields
//     says otherwise; when several rules admit a request, the fields are
//     those of the rule with the least remaining, the first on a tie);
//   - over a limit, it is answered 429 Too Many Requests and does not
//     reach the next handler; the refused request consumes no quota;
//   - if the store fails, the failure policy decides (below).
//
// # Failure policy
//
// A store error is never a 500. With FailOpen, the default, the request
// goes ahead uncounted. With FailClosed (per rule, or for every rule of a
// Limiter) it is answered 503 Service Unavailable with Retry-After
// (Options.FailClosedRetryAfter). A remote store gets at most
// Options.StoreTimeout (100ms by default) per decision, so a dead store
// costs a bounded wait, never a hang.
//
// # Shadow mode
//
// A rule with RuleSpec.Shadow, or every rule of a Limiter with
// Options.LogOnly, counts and reports but never refuses: what would have
// been a refusal is reported as WouldBlock to Options.Observe and logged,
// and the request goes ahead. This is the gateway's count action and
// log-only mode, for sizing a limit on live traffic before enforcing it.
//
// # Concurrency
//
// A Limiter and its Rules are immutable once made and safe for concurrent
// use. Admission is atomic: the store decides and records in one step, so
// N concurrent requests against a limit of N−1 admit exactly N−1.
package httplimit
