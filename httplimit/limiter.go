package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"reflect"
	"sync"
	"time"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// Defaults of Options.
const (
	// DefaultStoreTimeout is how long a decision waits for a remote store
	// unless Options.StoreTimeout says otherwise.
	DefaultStoreTimeout = 100 * time.Millisecond
	// DefaultFailClosedRetryAfter is the Retry-After of the 503 answers
	// given while the store fails under FailClosed, unless
	// Options.FailClosedRetryAfter says otherwise: the gateway's default
	// for its 503s.
	DefaultFailClosedRetryAfter = 10 * time.Second
)

// A FailurePolicy says what a rule does with a request when the store
// fails. The zero value means "the default": for a RuleSpec, the
// Limiter's Options.OnStoreError; for Options, FailOpen.
type FailurePolicy uint8

// Failure policies.
const (
	// FailOpen lets the request go ahead uncounted.
	FailOpen FailurePolicy = iota + 1
	// FailClosed answers 503 Service Unavailable with Retry-After.
	FailClosed
)

// String returns "fail_open" or "fail_closed", the gateway's
// configuration names; "default" for the zero value.
func (p FailurePolicy) String() string {
	switch p {
	case 0:
		return "default"
	case FailOpen:
		return "fail_open"
	case FailClosed:
		return "fail_closed"
	}
	return fmt.Sprintf("FailurePolicy(%d)", uint8(p))
}

// RateLimitFields says which responses carry the RateLimit-Policy and
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10). The zero
// value is FieldsAlways.
type RateLimitFields uint8

const (
	// FieldsAlways puts them on refusals and on the responses of admitted
	// requests, so that clients can slow down before they are refused:
	// the gateway's responses.ratelimit_headers: always, its default.
	FieldsAlways RateLimitFields = iota
	// FieldsOnRefusal puts them on 429 and 503 answers only (the
	// gateway's "limited").
	FieldsOnRefusal
	// FieldsNever leaves them off every response (the gateway's "never").
	FieldsNever
)

// ClientIP says how ByIP finds a request's client address and groups it
// into a key. It has the fields of the gateway's client_ip section and
// follows the same algorithm (docs/configuration.md#client-ip). The zero
// value takes the connection's peer address, ignores forwarding headers,
// and groups IPv6 clients by /64.
type ClientIP struct {
	// TrustedProxies are the prefixes of the proxies in front of the
	// application whose forwarding header is believed; a single address
	// is a /32 or /128 prefix. A request from a peer outside them is keyed
	// by the peer address, whatever its header says. The client is the
	// rightmost header entry outside every trusted prefix. Default none.
	// Exclusive with TrustedHops.
	TrustedProxies []netip.Prefix
	// TrustedHops, when positive, trusts that many proxies whatever their
	// address: the client is that many entries from the right of the
	// header. The application must then be reachable only through those
	// proxies. Default 0. At most 64.
	TrustedHops int
	// Header is the forwarding header: "X-Forwarded-For" (the default)
	// or "Forwarded" (RFC 7239). Only one is read.
	Header string
	// IPv4Prefix is the prefix length IPv4 clients are grouped by, 1 to
	// 32. Default (0) 32: one key per address.
	IPv4Prefix int
	// IPv6Prefix is the prefix length IPv6 clients are grouped by, 1 to
	// 128. Default (0) 64, since one host commonly holds a whole /64.
	IPv6Prefix int
}

// CORS lists the CORS headers put on the answers (429, 503), so that a
// browser script can read a refusal instead of reporting a network error.
// The zero value adds none. It does not answer preflights: that is the
// application's CORS middleware's job.
type CORS struct {
	// AllowOrigins are the origins allowed to read answers: ["*"] for
	// any, or origins such as "https://mavedb.org", one of which is echoed
	// in Access-Control-Allow-Origin when the request's Origin is exactly
	// it.
	AllowOrigins []string
	// ExposeHeaders is Access-Control-Expose-Headers. Default
	// Retry-After, RateLimit, RateLimit-Policy.
	ExposeHeaders []string
}

// Options configure a Limiter. The zero value gives the defaults: client
// address from the peer, English answers without CORS headers, RateLimit
// fields on every response, fail open, a 100ms store timeout, enforcing,
// no logs.
type Options struct {
	// ClientIP says how ByIP finds the client address.
	ClientIP ClientIP
	// CORS adds CORS headers to the answers.
	CORS CORS
	// DefaultLanguage is the language of answers when Accept-Language
	// asks for none of those available ("en", "es"). Default "en".
	DefaultLanguage string
	// RateLimitFields says which responses carry the RateLimit fields.
	// Default FieldsAlways.
	RateLimitFields RateLimitFields
	// OnStoreError is the failure policy of rules that do not set their
	// own. Default FailOpen.
	OnStoreError FailurePolicy
	// FailClosedRetryAfter is the wait a FailClosed rule asks for while
	// the store fails (rounded up to whole seconds in Retry-After). A
	// rule's fixed RuleSpec.RetryAfter replaces it in answers. Default
	// DefaultFailClosedRetryAfter (10s).
	FailClosedRetryAfter time.Duration
	// StoreTimeout bounds how long one decision waits for the store; a
	// store that does not answer in time has failed, and the failure
	// policy decides. Default DefaultStoreTimeout (100ms); negative for
	// no bound but the request's own context (or Take's ctx). Within a
	// positive StoreTimeout, Wrap and Check decide whether or not the
	// client is still connected (the request's context canceled), so
	// that a client cannot skip the quota by hanging up as soon as it
	// has sent a request; Take stops when its ctx ends. The in-memory
	// store (*memory.Store) never waits, so it gets no deadline and its
	// decisions do not allocate one.
	StoreTimeout time.Duration
	// LogOnly puts every rule in shadow mode: over the limit is reported
	// (WouldBlock) and logged, never refused (the gateway's mode:
	// log-only).
	LogOnly bool
	// Logger receives refusals and would-be refusals at Info, and store
	// failures at Warn (at most one a second per rule, with the number
	// left out). Keys are never logged: only the rule's key type (such as
	// "user"). Default: no logs.
	Logger *slog.Logger
	// Observe, if not nil, is called after every decision, for metrics.
	// It is called synchronously on the request's goroutine, so it must
	// be fast and safe for concurrent use.
	Observe func(Event)
}

// A Limiter holds what the rules of one store share: the store, the client
// address logic, the answer writer and the policies. Make one with New; a
// Limiter is immutable (apart from the names of its rules) and safe for
// concurrent use. The zero Limiter is not usable.
type Limiter struct {
	store      ratelimit.Store
	resolver   *clientip.Resolver
	answers    *respond.Writer
	fields     RateLimitFields
	onError    FailurePolicy
	failRetry  time.Duration
	timeout    time.Duration // 0: no deadline
	logOnly    bool
	log        *slog.Logger
	observe    func(Event)
	mu         sync.Mutex
	ruleByName map[string]bool
}

// New returns a Limiter that counts in store. The error lists every
// invalid option: a nil store (or a nil pointer such as an unset
// *redisstore.Store), client-address settings the gateway would
// refuse (TrustedHops with TrustedProxies, an invalid prefix, an unknown
// header, a prefix length out of range), an origin that is not an origin,
// a language not offered, an unknown policy, a negative duration.
//
// Settings that are valid but probably wrong, such as trusting
// 0.0.0.0/0 (every client could then choose its own key), are logged as
// warnings to Options.Logger.
func New(store ratelimit.Store, opts Options) (*Limiter, error) {
	var errs []error
	switch {
	case store == nil:
		errs = append(errs, errors.New("httplimit: new: store is nil"))
	case isNilPointer(store):
		errs = append(errs, fmt.Errorf("httplimit: new: store is a nil %T", store))
		store = nil
	}
	l := &Limiter{
		store:      store,
		fields:     opts.RateLimitFields,
		onError:    opts.OnStoreError,
		failRetry:  opts.FailClosedRetryAfter,
		timeout:    opts.StoreTimeout,
		logOnly:    opts.LogOnly,
		log:        opts.Logger,
		observe:    opts.Observe,
		ruleByName: map[string]bool{},
	}
	ipOpts := clientip.Options{
		TrustedProxies: opts.ClientIP.TrustedProxies,
		TrustedHops:    opts.ClientIP.TrustedHops,
		Header:         opts.ClientIP.Header,
		IPv4Prefix:     opts.ClientIP.IPv4Prefix,
		IPv6Prefix:     opts.ClientIP.IPv6Prefix,
	}
	var err error
	l.resolver, err = clientip.New(ipOpts)
	for _, line := range lines(err) {
		errs = append(errs, errors.New("httplimit: new: "+line))
	}
	l.answers, err = respond.NewWriter(respond.Options{
		DefaultLanguage:     opts.DefaultLanguage,
		CORS:                respond.CORS{AllowOrigins: opts.CORS.AllowOrigins, ExposeHeaders: opts.CORS.ExposeHeaders},
		OmitRateLimitFields: opts.RateLimitFields == FieldsNever,
	})
	for _, line := range lines(err) {
		errs = append(errs, errors.New("httplimit: new: "+line))
	}
	if opts.RateLimitFields > FieldsNever {
		errs = append(errs, fmt.Errorf("httplimit: new: unknown RateLimitFields %d", opts.RateLimitFields))
	}
	switch opts.OnStoreError {
	case 0:
		l.onError = FailOpen
	case FailOpen, FailClosed:
	default:
		errs = append(errs, fmt.Errorf("httplimit: new: unknown OnStoreError %s", opts.OnStoreError))
	}
	switch {
	case opts.FailClosedRetryAfter < 0:
		errs = append(errs, fmt.Errorf("httplimit: new: FailClosedRetryAfter %s is negative", opts.FailClosedRetryAfter))
	case opts.FailClosedRetryAfter == 0:
		l.failRetry = DefaultFailClosedRetryAfter
	}
	switch {
	case opts.StoreTimeout == 0:
		l.timeout = DefaultStoreTimeout
	case opts.StoreTimeout < 0:
		l.timeout = 0
	}
	if _, ok := store.(*memory.Store); ok {
		l.timeout = 0 // never waits: no deadline to allocate
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if l.log != nil {
		for _, w := range clientip.Warnings(ipOpts) {
			l.log.LogAttrs(context.Background(), slog.LevelWarn, "httplimit: client ip: "+w)
		}
	}
	return l, nil
}

// isNilPointer reports whether store is a nil pointer (or other nil
// reference) in a non-nil interface, such as a *redisstore.Store variable
// that was never set: its Take would panic on the first request.
func isNilPointer(store ratelimit.Store) bool {
	v := reflect.ValueOf(store)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// ClientIP returns the client address of r as ByIP finds it, following
// Options.ClientIP: always valid; 0.0.0.0 when the peer is not an IP
// address (a unix socket). It does not allocate.
func (l *Limiter) ClientIP(r *http.Request) netip.Addr {
	return l.resolver.Resolve(r.RemoteAddr, r.Header)
}

// take asks the store, within the Limiter's timeout.
func (l *Limiter) take(ctx context.Context, key string, limits []ratelimit.Limit) (ratelimit.Decision, error) {
	if l.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.timeout)
		defer cancel()
	}
	return l.store.Take(ctx, key, 1, limits...)
}
