package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/floodgate/floodgate/internal/httpsyntax"
	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/ratelimit"
)

// A RuleSpec describes a rule: what it counts by, how much it admits, and
// how it answers. Only Name and Limits are required.
type RuleSpec struct {
	// Name identifies the rule: its counters (two rules never share one),
	// the RateLimit-Policy it advertises, the problem's "rule" member and
	// logs. Printable ASCII; unique within a Limiter. Required.
	Name string
	// Limits are enforced together: a request is admitted when every one
	// admits it, and then counts against all of them (burst 60/1m plus
	// sustained 5000/1d). Each is its own RateLimit policy, named Name
	// when there is one limit and Name-WINDOW ("api-1m", "api-1d") when
	// there are several, as in the gateway. Required.
	Limits []ratelimit.Limit
	// Key says what requests are counted by. Default (the zero Key) ByIP.
	Key Key
	// RetryAfter, if positive, is the Retry-After of every HTTP answer the
	// rule gives, instead of the limiter's exact wait (MaveDB answers with
	// Retry-After: 300); Take still returns the exact wait. Default 0:
	// computed.
	RetryAfter time.Duration
	// Message, if not empty, replaces the answers' detail text: a text per
	// language tag (any BCP 47 tag: "en", "es", "pt-BR"), the empty tag
	// meaning the default language. Placeholders: {rule}, {limit},
	// {retry_after} (seconds), {retry_after_human} (in English and Spanish
	// texts only); see docs/answers.md.
	Message map[string]string
	// OnStoreError is the rule's failure policy. Default (0) the
	// Limiter's Options.OnStoreError.
	OnStoreError FailurePolicy
	// Shadow makes the rule count and report, but never refuse (the
	// gateway's action: count). A shadow rule puts no RateLimit fields on
	// responses.
	Shadow bool
}

// A Rule is a compiled RuleSpec bound to its Limiter: middleware (Wrap),
// an in-handler check (Check) and a direct API (Take, Allow) over the
// same counters. Make one with Limiter.NewRule; the zero Rule is not
// usable. A Rule is immutable and safe for concurrent use.
type Rule struct {
	l        *Limiter
	name     string
	key      Key
	keyType  string
	limits   []ratelimit.Limit
	prefix   string // counter-key prefix: namespace and rule name
	onError  FailurePolicy
	count    bool // RuleSpec.Shadow: the gateway's action count
	shadow   bool // count, or the Limiter's LogOnly: never refuses
	fieldsOK bool // RateLimit fields on admitted responses
	ans      *respond.Rule
	policy   []string // RateLimit-Policy value, shared by every response

	nextErrLog atomic.Int64 // Unix ns before which store errors are not logged
	errsMuted  atomic.Int64 // store errors not logged since the last one
}

// keyNamespace starts every counter key, so that the rules of an
// application never share a counter with the gateway's rules in a shared
// store.
const keyNamespace = "httplimit\x1f"

// NewRule compiles spec into a Rule of l. The error lists every problem:
// a missing or duplicate name, a name that is not printable ASCII, no
// limits, an invalid limit (ratelimit.Limit.Validate), two limits with the
// same window, a Key without its function, a ByHeader name that no request
// parsed by net/http carries in its Header (not a field name, or Host or
// Transfer-Encoding), a negative RetryAfter, a bad message, an unknown
// policy.
//
// Make rules once, at startup: a Limiter refuses a second rule of the same
// name, so that two rules never count under one counter by accident. To
// give several handlers one quota, wrap them all with the same Rule.
func (l *Limiter) NewRule(spec RuleSpec) (*Rule, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("httplimit: rule %q: "+format, append([]any{spec.Name}, args...)...))
	}
	r := &Rule{
		l:       l,
		name:    spec.Name,
		key:     spec.Key,
		keyType: spec.Key.String(),
		limits:  append([]ratelimit.Limit(nil), spec.Limits...),
		prefix:  keyNamespace + spec.Name + "\x1f",
		onError: spec.OnStoreError,
		count:   spec.Shadow,
		shadow:  spec.Shadow || l.logOnly,
	}
	r.fieldsOK = l.fields == FieldsAlways && !spec.Shadow
	switch {
	case spec.Name == "":
		bad("name is required")
	case strings.ContainsFunc(spec.Name, func(c rune) bool { return c < 0x20 || c > 0x7e }):
		bad("name must be printable ASCII")
	}
	if len(spec.Limits) == 0 {
		bad("no limits")
	}
	for i, lim := range spec.Limits {
		if err := lim.Validate(); err != nil {
			bad("limit %d (%s): %v", i, lim, err)
		}
		for j, prev := range spec.Limits[:i] {
			if prev.Window == lim.Window {
				bad("limits %d and %d have the same window %s: give each limit of a rule its own window", j, i, ratelimit.FormatWindow(lim.Window))
			}
		}
	}
	switch spec.Key.kind {
	case keyHeader:
		if spec.Key.header == "" {
			bad("key ByHeader has no header name")
		} else if problem := headerKeyProblem(spec.Key.header); problem != "" {
			bad("key ByHeader(%q): %s", spec.Key.header, problem)
		}
	case keyUser:
		if spec.Key.user == nil {
			bad("key ByUser has no user function")
		}
	case keyFunc:
		if spec.Key.fn == nil {
			bad("key ByFunc has no function")
		}
	}
	if spec.RetryAfter < 0 {
		bad("RetryAfter %s is negative", spec.RetryAfter)
	}
	switch spec.OnStoreError {
	case 0:
		r.onError = l.onError
	case FailOpen, FailClosed:
	default:
		bad("unknown OnStoreError %s", spec.OnStoreError)
	}
	msg, err := respond.CompileMessage(spec.Message)
	for _, line := range lines(err) {
		bad("%s", line)
	}

	// The answers, built as the gateway builds a rule's (internal/gateway).
	if len(errs) == 0 {
		rs := respond.RuleSpec{Name: spec.Name, RetryAfter: spec.RetryAfter, Message: msg}
		for _, lim := range spec.Limits {
			rs.Limits = append(rs.Limits, lim.String())
			name := spec.Name
			if len(spec.Limits) > 1 {
				name += "-" + ratelimit.FormatWindow(lim.Window)
			}
			rs.Policies = append(rs.Policies, respond.Policy{Name: name, Quota: lim.Count, Window: lim.Window})
		}
		r.ans, err = respond.NewRule(rs)
		for _, line := range lines(err) {
			bad("%s", line)
		}
	}
	if len(errs) == 0 {
		r.policy = []string{r.ans.PolicyField()}
		l.mu.Lock()
		if l.ruleByName[spec.Name] {
			bad("name is already used by another rule of this Limiter")
		} else {
			l.ruleByName[spec.Name] = true
		}
		l.mu.Unlock()
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// headerKeyProblem says why a ByHeader key named name (canonical) would
// never find a value in a request that net/http's server parsed, or ""
// when it can: a rule keyed by such a header would count nothing, and so
// limit nothing, without a sign.
func headerKeyProblem(name string) string {
	switch {
	case !httpsyntax.IsToken(name):
		return "not a header field name (RFC 9110 token), so no request carries it"
	case name == "Host":
		return "net/http moves Host out of Request.Header into Request.Host; use ByFunc to count by it"
	case name == "Transfer-Encoding":
		return "net/http moves Transfer-Encoding out of Request.Header into Request.TransferEncoding; use ByFunc to count by it"
	}
	return ""
}

// lines returns the lines of err's message: one per problem, for an
// error made by errors.Join.
func lines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}

// Name returns the rule's name.
func (r *Rule) Name() string { return r.name }

// Wrap returns next limited by the rule: it counts each request under the
// value the rule's Key finds in it and either passes it to next or
// answers it itself (429 over the limit; 503 when the store fails and
// the rule fails closed), as the package documentation describes.
// Requests without a key value and CORS preflights go to next uncounted.
//
// Wrap has the shape of func(http.Handler) http.Handler, so r.Wrap can be
// given to any middleware chain (chi's Use and With, alice, …). It does
// not wrap the ResponseWriter: next sees the caller's, with its optional
// interfaces (http.Flusher, http.Hijacker).
func (r *Rule) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if isPreflight(req) {
			next.ServeHTTP(w, req)
			return
		}
		bp := bufPool.Get().(*[]byte)
		buf, ok := r.key.appendValue(append((*bp)[:0], r.prefix...), r.l.resolver, req)
		pass := true
		if ok {
			pass = r.check(w, req, buf)
		}
		putBuf(bp, buf)
		if pass {
			next.ServeHTTP(w, req)
		}
	})
}

// Check counts one request under key, the value the rule's Key would
// find, and reports whether the request may go ahead. When it may not,
// Check has written the rule's answer to w (429, or 503 when the store
// failed and the rule fails closed), and the caller must write nothing
// more. When it may, Check has put the RateLimit fields on w's header (as
// Options.RateLimitFields says).
//
// It is Wrap's decision for handlers that know the key only after some
// work of their own, such as loading the resource the request acts on.
func (r *Rule) Check(w http.ResponseWriter, req *http.Request, key string) bool {
	bp := bufPool.Get().(*[]byte)
	buf := append(append((*bp)[:0], r.prefix...), key...)
	pass := r.check(w, req, buf)
	putBuf(bp, buf)
	return pass
}

// Take counts one event under key (the value the rule's Key would find
// in a request, such as the user's ID) and returns the decision to act
// on: Allowed, or refused with how long to wait (RetryAfter). It is for
// operations that are not HTTP requests: "may user U publish another
// score set?".
//
// The Decision follows the rule's policies, so callers need not look at
// the error to act correctly:
//
//   - In shadow mode a refusal is reported as WouldBlock and returned as
//     Allowed, with RetryAfter zero.
//   - When the store fails, the error says why (it wraps the store's
//     error, and context.DeadlineExceeded after Options.StoreTimeout),
//     and the Decision is the failure policy's: Allowed under FailOpen;
//     under FailClosed refused with RetryAfter
//     Options.FailClosedRetryAfter and Remaining 0.
//
// RetryAfter is the limiter's exact wait: the rule's fixed
// RuleSpec.RetryAfter is what its HTTP answers say, not what Take
// returns, so that a caller that schedules a retry can do it on time.
//
// A refused event consumes no quota. Take does not retain key.
func (r *Rule) Take(ctx context.Context, key string) (ratelimit.Decision, error) {
	bp := bufPool.Get().(*[]byte)
	buf := append(append((*bp)[:0], r.prefix...), key...)
	d, _, err := r.decide(ctx, nil, buf)
	putBuf(bp, buf)
	return d, err
}

// Allow reports whether one more event under key may go ahead, counting
// it if so: Take(ctx, key).Allowed. A store failure is decided by the
// rule's failure policy (and logged); use Take to see it.
func (r *Rule) Allow(ctx context.Context, key string) bool {
	d, _ := r.Take(ctx, key)
	return d.Allowed
}

// verdict is what the caller of decide does with the request.
type verdict uint8

const (
	admit        verdict = iota // go ahead
	admitFields                 // go ahead, with RateLimit fields
	refuseLimit                 // 429
	refuseFailed                // 503
)

// decide takes one event under the counter key (prefix included),
// reports it, and returns the Decision to act on, what to do, and the
// store's error. req, if not nil, is the request, for the log.
func (r *Rule) decide(ctx context.Context, req *http.Request, key []byte) (ratelimit.Decision, verdict, error) {
	d, err := r.l.take(ctx, unsafe.String(unsafe.SliceData(key), len(key)), r.limits)
	switch {
	case err != nil:
		err = fmt.Errorf("httplimit: rule %q: take: %w", r.name, err)
		r.logStoreError(err)
		if r.onError == FailClosed {
			if r.shadow {
				r.report(req, WouldBlock, ratelimit.Decision{}, err)
				return ratelimit.Decision{Allowed: true}, admit, err
			}
			r.report(req, Blocked, ratelimit.Decision{}, err)
			return ratelimit.Decision{RetryAfter: r.l.failRetry}, refuseFailed, err
		}
		r.report(req, Allowed, ratelimit.Decision{}, err)
		return ratelimit.Decision{Allowed: true}, admit, err
	case d.Allowed:
		r.report(req, Allowed, d, nil)
		if r.fieldsOK {
			return d, admitFields, nil
		}
		return d, admit, nil
	case r.shadow:
		r.report(req, WouldBlock, d, nil)
		d.Allowed, d.RetryAfter = true, 0
		return d, admit, nil
	}
	r.report(req, Blocked, d, nil)
	return d, refuseLimit, nil
}

// check is Check and Wrap's decision on the counter key, a pooled
// buffer whose spare room formats the RateLimit field.
func (r *Rule) check(w http.ResponseWriter, req *http.Request, key []byte) bool {
	ctx := req.Context()
	if r.l.timeout > 0 {
		// The decision does not depend on whether the client is still
		// there: net/http cancels the context when the connection
		// closes, and a remote store would then fail, which FailOpen
		// admits uncounted, so a client that hangs up as soon as it has
		// sent a request would skip the quota while the handler still
		// ran. The memory store ignores the context and so counts such a
		// request; remote stores do the same within StoreTimeout.
		ctx = context.WithoutCancel(ctx)
	}
	d, v, _ := r.decide(ctx, req, key)
	switch v {
	case admitFields:
		r.setFields(w.Header(), d, key[len(key):])
	case refuseLimit:
		r.l.answers.Write(w, req, respond.Answer{Kind: respond.RateLimited, Rule: r.ans,
			RetryAfter: d.RetryAfter, Limit: d.Limit, Remaining: d.Remaining})
		return false
	case refuseFailed:
		r.l.answers.Write(w, req, respond.Answer{Kind: respond.Unavailable, Rule: r.ans,
			RetryAfter: d.RetryAfter})
		return false
	}
	return true
}

// setFields puts the rule's RateLimit-Policy and RateLimit fields for an
// admitted request on h, unless h already has those of a rule (an outer
// middleware) with no more remaining: the fields name the rule the
// request came closest to, the first on a tie, as in the gateway. scratch
// is spare room to format the field in.
func (r *Rule) setFields(h http.Header, d ratelimit.Decision, scratch []byte) {
	if v := h["Ratelimit"]; len(v) == 1 {
		if rem, ok := remainingOf(v[0]); ok && rem <= d.Remaining {
			return
		}
	}
	d.Allowed = true // the fields of an admission
	_, reset := r.ans.Timing(d)
	f := respond.AppendRateLimit(scratch[:0], r.ans.PolicyName(d.Limit), d.Remaining, reset)
	h["Ratelimit-Policy"] = r.policy
	h["Ratelimit"] = []string{string(f)}
}

// remainingOf returns the r parameter of the first item of a RateLimit
// field value, such as `"api";r=42;t=10`.
func remainingOf(v string) (int64, bool) {
	// Skip the policy name, an RFC 9651 String that may hold ";r=".
	if len(v) == 0 || v[0] != '"' {
		return 0, false
	}
	i := 1
	for ; i < len(v) && v[i] != '"'; i++ {
		if v[i] == '\\' {
			i++
		}
	}
	_, after, ok := strings.Cut(v[min(i, len(v)):], ";r=")
	if !ok {
		return 0, false
	}
	var n int64
	j := 0
	for ; j < len(after) && j < 18 && '0' <= after[j] && after[j] <= '9'; j++ {
		n = n*10 + int64(after[j]-'0')
	}
	return n, j > 0
}

// report tells Options.Observe and the log about one decision.
func (r *Rule) report(req *http.Request, o Outcome, d ratelimit.Decision, err error) {
	if f := r.l.observe; f != nil {
		f(Event{Rule: r.name, Key: r.keyType, Outcome: o, Decision: d, Err: err})
	}
	if r.l.log == nil || o == Allowed || err != nil {
		return
	}
	action := "block"
	if r.count {
		action = "count"
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("rule", r.name),
		slog.String("action", action),
		slog.String("decision", o.String()),
	)
	if req != nil {
		attrs = append(attrs, slog.String("method", req.Method), slog.String("path", req.URL.Path))
	}
	attrs = append(attrs,
		slog.String("key_type", r.keyType),
		slog.String("limit", r.limits[min(max(d.Limit, 0), len(r.limits)-1)].String()),
		slog.Int64("remaining", d.Remaining),
	)
	if !d.Allowed {
		// What the client was (or, for a shadow rule, would have been) sent.
		retry, _ := r.ans.Timing(d)
		attrs = append(attrs, slog.Int64("retry_after_s", retry))
	}
	r.l.log.LogAttrs(context.Background(), slog.LevelInfo, "decision", attrs...)
}

// logStoreError logs err at most once a second for the rule, with the
// number of errors not logged since the previous one.
func (r *Rule) logStoreError(err error) {
	if r.l.log == nil {
		return
	}
	now := time.Now().UnixNano()
	next := r.nextErrLog.Load()
	if now < next || !r.nextErrLog.CompareAndSwap(next, now+int64(time.Second)) {
		r.errsMuted.Add(1)
		return
	}
	r.l.log.LogAttrs(context.Background(), slog.LevelWarn, "store failed",
		slog.String("rule", r.name),
		slog.String("policy", r.onError.String()),
		slog.Int64("not_logged", r.errsMuted.Swap(0)),
		slog.String("error", err.Error()))
}

// isPreflight reports whether req is a CORS preflight request.
func isPreflight(req *http.Request) bool {
	return req.Method == http.MethodOptions && len(req.Header["Access-Control-Request-Method"]) > 0
}

// bufPool holds the buffers counter keys are built in.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}

func putBuf(bp *[]byte, b []byte) {
	if cap(b) <= 4<<10 {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}
