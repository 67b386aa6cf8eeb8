package rules

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/floodgate/floodgate/internal/config"

	"github.com/floodgate/floodgate/ratelimit"
)

// Outcome is what one rule did with one request; the values are the
// `decision` label of floodgate_rule_decisions_total.
type Outcome uint8

// Outcomes.
const (
	Allowed     Outcome = iota // matched and within its limits (or an allow rule)
	Blocked                    // over a block rule's limit, or banned: answered 429
	WouldBlock                 // over a count rule's limit or cap, or any block/deny in log-only mode
	Denied                     // a deny rule answered 403
	Unavailable                // a block rule's concurrency cap was full, or its store failed under fail_closed: answered 503
)

// NumOutcomes is the number of Outcomes: a [NumOutcomes]T indexed by
// Outcome holds one T per outcome.
const NumOutcomes = int(Unavailable) + 1

var outcomeNames = [NumOutcomes]string{Allowed: "allowed", Blocked: "blocked", WouldBlock: "would_block", Denied: "denied", Unavailable: "unavailable"}

func (o Outcome) String() string { return outcomeNames[o] }

// OutcomeNames lists every Outcome's name.
func OutcomeNames() []string { return outcomeNames[:] }

// A FailureKind names the part of a rule that failed to evaluate; the
// names are the `kind` label of floodgate_rule_errors_total.
type FailureKind uint8

// FailureKinds.
const (
	FailedCondition FailureKind = iota // the rule's when (or its count_when) failed to evaluate
	FailedKey                          // an expr: key characteristic failed to evaluate
	FailedStore                        // the store failed
)

var failureKindNames = [...]string{FailedCondition: "condition", FailedKey: "key", FailedStore: "store"}

func (k FailureKind) String() string { return failureKindNames[k] }

// FailureKindNames lists every FailureKind's name.
func FailureKindNames() []string { return failureKindNames[:] }

// A Failure is the error an Observer is given when a rule failed to
// evaluate: which part failed, and why. The part is said rather than left
// to be inferred from the action, since a block or count rule can fail in
// its condition as well as in its key.
type Failure struct {
	Kind FailureKind
	Err  error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// FailureKindOf returns the kind of the failure err reports. An error that
// is no *Failure is counted as the store's, the one part outside the rule.
func FailureKindOf(err error) FailureKind {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind
	}
	return FailedStore
}

// An Observer is told every rule a request matched and what the rule did.
// key is the counter key (nil for deny and allow rules, and when the
// condition or key failed); it is only valid during the call. err, a
// *Failure, is a condition, key or store failure: the rule was then
// skipped (fail open) and o is Allowed, or, for a store failure under a
// fail-closed rule, the request refused and o is Unavailable.
type Observer interface {
	Observe(req *Request, r *Rule, o Outcome, key []byte, d ratelimit.Decision, err error)
	// ObserveCandidate reports what candidate limit i of r would have
	// decided (Allowed or WouldBlock).
	ObserveCandidate(r *Rule, i int, o Outcome)
	// Charged reports cost charged to r after a response, in the rule's
	// unit (requests, seconds, bytes, header units).
	Charged(r *Rule, cost float64)
}

// Verdict is the result of evaluating a request against a Set.
type Verdict struct {
	// Rule is the rule that answered the request (Action Deny or Block),
	// nil when the request is to be forwarded.
	Rule     *Rule
	Decision ratelimit.Decision
	// Unavailable marks a refusal by a concurrency cap (503), not a rate
	// limit (429).
	Unavailable bool
	// Closest is the enforced block rule whose limit the request came
	// closest to (least remaining), for RateLimit headers on forwarded
	// responses; nil when no block rule counted the request.
	Closest         *Rule
	ClosestDecision ratelimit.Decision
}

// Engine evaluates requests against a Set with a Store.
type Engine struct {
	Set   *Set
	Store ratelimit.Store
	// LogOnly, when it holds true, turns every block and deny into a
	// would-block. It is shared and switched at run time (admin API); nil
	// means enforce.
	LogOnly *atomic.Bool
	// Inflight counts requests in flight for concurrency caps; shared
	// across reloads. Required when a rule has a cap.
	Inflight *Inflight
	Obs      Observer
}

// heldSlot is a concurrency slot a request holds until Release.
type heldSlot struct{ key string }

// deferredCharge is a count made after the response (count_when, cost).
type deferredCharge struct {
	rule *Rule
	key  string
}

// Evaluate runs the rules for req in order (see the package comment). The
// caller must call Finish once the request is over, whatever the verdict:
// it releases concurrency slots and makes the counts that depend on the
// response.
func (e *Engine) Evaluate(ctx context.Context, req *Request) Verdict {
	var v Verdict
	logOnly := e.LogOnly != nil && e.LogOnly.Load()
	// Conditions shared by several rules, evaluated once: bit i of known
	// says slot i has been, bit i of holds gives the result.
	var known, holds uint64
	req.matchKnown = 0 // the request may have changed since an earlier evaluation
	for _, r := range e.Set.Rules {
		if !r.applies(req) || req.NoResponse && r.needsResponse {
			continue
		}
		if r.when != nil {
			bit := uint64(1) << (r.whenSlot & 63)
			if r.whenSlot >= 0 && known&bit != 0 {
				if holds&bit == 0 {
					continue
				}
			} else {
				b, err := r.when.eval(req)
				if err != nil {
					e.observe(req, r, Allowed, nil, ratelimit.Decision{}, &Failure{FailedCondition, err})
					continue
				}
				if r.whenSlot >= 0 {
					known |= bit
					if b {
						holds |= bit
					}
				}
				if !b {
					continue
				}
			}
		}
		switch r.Action {
		case Allow:
			e.observe(req, r, Allowed, nil, ratelimit.Decision{Allowed: true}, nil)
			return v
		case Deny:
			if logOnly {
				e.observe(req, r, WouldBlock, nil, ratelimit.Decision{}, nil)
				continue
			}
			e.observe(req, r, Denied, nil, ratelimit.Decision{}, nil)
			v.Rule = r
			v.Decision = ratelimit.Decision{}
			return v
		}
		key, err := r.appendKey(req.keyBuf[:0], req)
		req.keyBuf = key
		if err != nil {
			e.observe(req, r, Allowed, nil, ratelimit.Decision{}, &Failure{FailedKey, err})
			continue
		}
		skey := unsafe.String(unsafe.SliceData(key), len(key))
		enforce := r.Action == Block && !logOnly
		d, refused, unavailable, err := e.decide(ctx, req, r, key, skey, enforce)
		if err != nil {
			// The store failed: never a 500. Fail open admits the request;
			// fail closed answers 503.
			err = &Failure{FailedStore, err}
			if r.FailClosed && enforce {
				d = ratelimit.Decision{RetryAfter: r.unavailableRetry()}
				e.observe(req, r, Unavailable, key, d, err)
				v.Rule, v.Decision, v.Unavailable = r, d, true
				return v
			}
			e.observe(req, r, Allowed, key, ratelimit.Decision{Allowed: true}, err)
			continue
		}
		d.Remaining /= r.scale
		switch {
		case !refused:
			e.observe(req, r, Allowed, key, d, nil)
			if r.Action == Block && len(r.Limits) > 0 && (v.Closest == nil || d.Remaining < v.ClosestDecision.Remaining) {
				v.Closest, v.ClosestDecision = r, d
			}
		case !enforce:
			e.observe(req, r, WouldBlock, key, d, nil)
		default:
			o := Blocked
			if unavailable {
				o = Unavailable
			}
			e.observe(req, r, o, key, d, nil)
			v.Rule, v.Decision, v.Unavailable = r, d, unavailable
			return v
		}
	}
	return v
}

// decide applies one counting rule to a request: ban, concurrency caps,
// limits and candidates. refused reports that the rule is over (a ban, a
// cap or a limit); unavailable, that a cap refused.
func (e *Engine) decide(ctx context.Context, req *Request, r *Rule, key []byte, skey string, enforce bool) (d ratelimit.Decision, refused, unavailable bool, err error) {
	d.Allowed = true
	if r.Ban > 0 {
		ban, err := e.Store.Take(ctx, banKey(req, key), 0, banLimit(r))
		if err != nil {
			return d, false, false, err
		}
		if ban.Remaining < 1 {
			ban.Allowed, ban.RetryAfter, ban.Remaining = false, ban.ResetAfter, 0
			return ban, true, false, nil
		}
	}
	for i, c := range r.Candidates {
		cd, err := e.Store.Take(ctx, skey, 1, c)
		if err == nil {
			o := Allowed
			if !cd.Allowed {
				o = WouldBlock
			}
			if e.Obs != nil {
				e.Obs.ObserveCandidate(r, i, o)
			}
		}
	}
	if len(r.storeLims) > 0 {
		if !r.deferred {
			d, err = e.Store.Take(ctx, skey, 1, r.storeLims...)
		} else if d, err = e.Store.Take(ctx, skey, 0, r.storeLims...); err == nil {
			// Counted after the response: refuse now only when nothing
			// remains, and learn how long until something does.
			if d.Remaining < 1 {
				// Refused (and so not recorded), unless budget opened up
				// meanwhile, in which case this request takes one unit.
				d, err = e.Store.Take(ctx, skey, 1, r.storeLims...)
			}
		}
		if err != nil {
			return d, false, false, err
		}
		if !d.Allowed {
			if enforce && r.Ban > 0 {
				// This refusal starts the ban: it says when the ban ends,
				// as every refusal during it does, not when the limit
				// would admit again.
				if ban, err := e.Store.Take(ctx, banKey(req, key), 1, banLimit(r)); err == nil {
					d.RetryAfter = max(d.RetryAfter, ban.ResetAfter)
				}
			}
			return d, true, false, nil
		}
	}
	var capKey string // the per-key cap's key: "key\x1f" and the key
	if r.MaxInflight > 0 || r.MaxInflightPerKey > 0 {
		var ok bool
		if capKey, ok = e.acquire(req, r, skey, enforce); !ok {
			return ratelimit.Decision{RetryAfter: r.unavailableRetry()}, true, true, nil
		}
	}
	if r.deferred {
		k := capKey[min(len(capKey), len(capKeyPrefix)):] // the key, sharing the cap key's copy
		if k == "" {
			k = string(key)
		}
		req.deferred = append(req.deferred, deferredCharge{rule: r, key: k})
	}
	return d, false, false, nil
}

// capKeyPrefix begins the key of a per-key concurrency cap.
const capKeyPrefix = "key\x1f"

// acquire takes the rule's concurrency slots, all or none, and returns
// the per-key cap's key when there is one (a copy of skey after
// capKeyPrefix, which a deferred charge may share). In shadow (enforce
// false) a full cap is reported but nothing is held past it.
func (e *Engine) acquire(req *Request, r *Rule, skey string, enforce bool) (string, bool) {
	if r.MaxInflight > 0 {
		if !e.Inflight.Acquire(r.capKey, r.MaxInflight) {
			return "", false
		}
		req.held = append(req.held, heldSlot{r.capKey})
	}
	if r.MaxInflightPerKey > 0 {
		k := capKeyPrefix + skey
		if !e.Inflight.Acquire(k, r.MaxInflightPerKey) {
			if r.MaxInflight > 0 { // give back the per-process slot just taken
				e.Inflight.Release(r.capKey)
				req.held = req.held[:len(req.held)-1]
			}
			return "", false
		}
		req.held = append(req.held, heldSlot{k})
		return k, true
	}
	return "", true
}

// Response is what Finish needs to know of the answer a request got.
type Response struct {
	Status int
	Header http.Header
	// Upstream is how long the upstream took (zero when not forwarded).
	Upstream time.Duration
	// Bytes is the size of the response body sent.
	Bytes int64
	// Forwarded reports that the upstream answered.
	Forwarded bool
	// Sent reports that the request reached the upstream, answered or
	// not (it timed out, failed, or the client left first): the
	// upstream's time is charged to upstream_seconds all the same.
	Sent bool
}

// Finish ends a request evaluated by Evaluate: it releases the
// concurrency slots the request held and makes the counts that depend on
// the response (count_when, cost). Costs are charged after the fact: a
// request that takes a client over its budget is served, and what it cost
// beyond the budget is a debt (ratelimit.Charger, up to one more budget)
// that the client repays before its next request is admitted. With a
// store that cannot charge, a cost larger than what remains fills the
// budget.
func (e *Engine) Finish(ctx context.Context, req *Request, resp Response) {
	if !req.Pending() {
		return
	}
	for _, h := range req.held {
		e.Inflight.Release(h.key)
	}
	req.held = req.held[:0]
	for _, c := range req.deferred {
		r := c.rule
		if !resp.Forwarded && (r.Cost != config.CostRequests || r.countWhen != nil) &&
			!(resp.Sent && r.Cost == config.CostUpstreamSeconds && r.countWhen == nil) {
			// The response is floodgate's own (a later rule's refusal, an
			// upstream failure): a count_when on it would count what the
			// upstream never saw, and it has no header or body to cost.
			// Only the upstream's time is charged, when the request
			// reached it: it worked on it, answer or not.
			continue
		}
		if r.countWhen != nil {
			// A copy: were resp's own address taken, every call would
			// move resp to the heap on entry, count_when or not.
			rc := resp
			out, _, err := r.countWhen.Eval(responseActivation{activation{req}, &rc})
			if err != nil {
				e.observe(req, r, Allowed, nil, ratelimit.Decision{}, &Failure{FailedCondition, err})
				continue
			}
			if b, ok := out.Value().(bool); !ok || !b {
				continue
			}
		}
		n, unit := r.cost(&resp)
		if n <= 0 {
			continue
		}
		var err error
		if ch, ok := e.Store.(ratelimit.Charger); ok {
			_, err = ch.Charge(ctx, c.key, n, r.storeLims...)
		} else {
			// A store that cannot go past a limit: a charge larger
			// than what remains fills the budget.
			var d ratelimit.Decision
			d, err = e.Store.Take(ctx, c.key, n, r.storeLims...)
			if err == nil && !d.Allowed && d.Remaining > 0 {
				_, err = e.Store.Take(ctx, c.key, d.Remaining, r.storeLims...)
			}
		}
		if err != nil {
			e.observe(req, r, Allowed, []byte(c.key), ratelimit.Decision{Allowed: true}, &Failure{FailedStore, err})
			continue
		}
		if e.Obs != nil {
			e.Obs.Charged(r, unit)
		}
	}
	req.deferred = req.deferred[:0]
}

// cost returns what resp costs in store units and in the rule's unit.
func (r *Rule) cost(resp *Response) (int64, float64) {
	switch r.Cost {
	case config.CostUpstreamSeconds:
		ms := resp.Upstream.Milliseconds()
		if ms < 1 && resp.Upstream > 0 {
			ms = 1
		}
		return ms, resp.Upstream.Seconds()
	case config.CostResponseBytes:
		return resp.Bytes, float64(resp.Bytes)
	case config.CostHeader:
		v, err := strconv.ParseFloat(strings.TrimSpace(resp.Header.Get(r.CostHeader)), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) || !(v > 0) {
			return 0, 0 // absent, not a number, not positive (NaN too)
		}
		// A cost beyond twice the largest limit (or too large to be
		// read: 1e400, +Inf) counts as twice that limit, the most a
		// budget can owe (ratelimit.Limit.Charge): never nothing.
		var most int64
		for _, l := range r.storeLims {
			most = max(most, 2*l.Count)
		}
		n := most
		if v < float64(most) {
			n = int64(math.Ceil(v))
		}
		return n, float64(n)
	}
	return 1, 1
}

// banKey is the counter that marks a key as banned.
func banKey(req *Request, key []byte) string {
	req.banBuf = append(append(req.banBuf[:0], "ban\x1e"...), key...)
	return unsafe.String(unsafe.SliceData(req.banBuf), len(req.banBuf))
}

// banLimit admits one event per ban duration: after one is taken (the
// refusal that starts the ban), a peek shows nothing remaining until the
// ban is over.
// DefaultUnavailableRetry is the Retry-After of a rule's 503 (a
// concurrency cap, or fail_closed while the store is down) when the rule
// sets no retry_after.
const DefaultUnavailableRetry = 10 * time.Second

// unavailableRetry is the wait of the rule's 503 answers.
func (r *Rule) unavailableRetry() time.Duration {
	if r.RetryAfter > 0 {
		return r.RetryAfter
	}
	return DefaultUnavailableRetry
}

func banLimit(r *Rule) ratelimit.Limit {
	return ratelimit.Limit{Count: 1, Window: r.Ban, Algorithm: ratelimit.GCRA}
}

func (e *Engine) observe(req *Request, r *Rule, o Outcome, key []byte, d ratelimit.Decision, err error) {
	if o == WouldBlock && err == nil {
		req.WouldBlock = append(req.WouldBlock, r.Name)
	}
	if e.Obs != nil {
		e.Obs.Observe(req, r, o, key, d, err)
	}
}

// applies reports whether req has what r needs before its condition is
// even evaluated: its plan, and the identities its key is made of. A rule
// keyed by session never puts every request without one in one counter.
func (r *Rule) applies(req *Request) bool {
	return (r.Plan == "" || r.Plan == req.APIClientPlan) &&
		(!r.needsSession || req.Session != "") &&
		(!r.needsClient || req.APIClient != "")
}

// appendKey appends r's counter key for req to dst.
func (r *Rule) appendKey(dst []byte, req *Request) ([]byte, error) {
	dst = append(dst, r.prefix...)
	for i, p := range r.parts {
		if i > 0 {
			dst = append(dst, 0)
		}
		switch p.kind {
		case config.KeyIP:
			dst = appendIP(dst, req)
		case config.KeyPath:
			dst = append(dst, req.Path...)
		case config.KeyRoute:
			dst = append(dst, req.Route...)
		case config.KeyMethod:
			dst = append(dst, req.method()...)
		case config.KeyHost:
			dst = append(dst, hostOnly(req.HTTP.Host)...)
		case config.KeySession:
			dst = append(dst, req.Session...)
		case config.KeyAPIClient:
			dst = append(dst, req.APIClient...)
		case config.KeyHeader:
			for j, v := range req.HTTP.Header[p.arg] {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, v...)
			}
		case config.KeyQuery:
			dst = append(dst, req.Query()[p.arg]...)
		case config.KeyExpr:
			out, _, err := p.prg.Eval(activation{req})
			if err != nil {
				return dst, err
			}
			dst = append(dst, keyValue(out)...)
		}
	}
	return dst, nil
}

func appendIP(dst []byte, req *Request) []byte {
	if !req.ClientPrefix.IsValid() {
		return append(dst, "unknown"...)
	}
	return req.ClientPrefix.AppendTo(dst)
}
