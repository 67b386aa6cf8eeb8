package rules

import (
	"context"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// Step is what one rule would do with a request, as Explain reports it.
type Step struct {
	Rule *Rule
	// Reached is false for rules after the one that would answer.
	Reached bool
	// Matched reports whether the condition holds.
	Matched bool
	// Err is a condition, key or store failure (the rule would be skipped).
	Err error
	// Key is the counter key (nil for deny and allow rules).
	Key []byte
	// State is the counter state now (a peek: Remaining is how many more
	// requests the limit admits), for count and block rules; when the rule
	// would refuse, the refusal's Decision, with its RetryAfter. Allowed
	// is whether the rule would admit.
	State ratelimit.Decision
	// Outcome is what the rule would decide for this request.
	Outcome Outcome
	// InFlight and InFlightPerKey are the requests in flight now under
	// the rule's concurrency caps (all keys together, and this key), for
	// a rule with that cap whose limits admit the request.
	InFlight, InFlightPerKey int64
	// CapFull reports that one of those caps is full: the Outcome is then
	// Unavailable, as Evaluate's 503 (WouldBlock in log-only mode or for
	// a count rule), and State.RetryAfter that answer's.
	CapFull bool
	// Banned reports that the key is under the rule's ban: the rule
	// refuses it whatever its counters say, and State.RetryAfter is the
	// rest of the ban.
	Banned bool
}

// Explain reports, rule by rule, what Evaluate would do with req, without
// counting it: counters are only peeked at (a Take of zero events). A count
// or block rule would refuse when its limit has nothing remaining.
func (e *Engine) Explain(ctx context.Context, req *Request) []Step {
	logOnly := e.LogOnly != nil && e.LogOnly.Load()
	steps := make([]Step, len(e.Set.Rules))
	stopped := false
	req.matchKnown = 0
	for i, r := range e.Set.Rules {
		st := &steps[i]
		st.Rule = r
		if stopped {
			continue
		}
		st.Reached = true
		if !r.applies(req) {
			continue // not this client's plan, or no session / API client to key by
		}
		if r.when != nil {
			b, err := r.when.eval(req)
			if err != nil {
				st.Err = err
				continue
			}
			if !b {
				continue
			}
		}
		st.Matched = true
		switch r.Action {
		case Allow:
			st.Outcome, stopped = Allowed, true
			continue
		case Deny:
			if logOnly {
				st.Outcome = WouldBlock
			} else {
				st.Outcome, stopped = Denied, true
			}
			continue
		}
		key, err := r.appendKey(nil, req)
		st.Key = key
		if err != nil {
			st.Err = err
			continue
		}
		if r.Ban > 0 {
			ban, err := e.Store.Take(ctx, banKey(req, key), 0, banLimit(r))
			if err == nil && ban.Remaining < 1 {
				st.State = ratelimit.Decision{RetryAfter: ban.ResetAfter}
				st.Banned = true
				if r.Action == Count || logOnly {
					st.Outcome = WouldBlock
				} else {
					st.Outcome, stopped = Blocked, true
				}
				continue
			}
		}
		if len(r.storeLims) == 0 { // a concurrency cap only: nothing to peek at
			st.Outcome = Allowed
			stopped = e.explainCaps(st, r, key, logOnly)
			continue
		}
		d, err := e.Store.Take(ctx, unsafe.String(unsafe.SliceData(key), len(key)), 0, r.storeLims...)
		if err != nil {
			st.Err = err
			continue
		}
		// Decided in store units, as decide does: a budget counted in
		// milliseconds with less than a second left still admits.
		admits := d.Remaining >= 1
		if !admits {
			// What the refusal would say: a Take of one event, which the
			// counter refuses and so does not record (as Evaluate's own
			// look before counting after the response does).
			if no, err := e.Store.Take(ctx, unsafe.String(unsafe.SliceData(key), len(key)), 1, r.storeLims...); err == nil && !no.Allowed {
				d = no
			}
		}
		d.Remaining /= r.scale
		st.State = d
		switch {
		case admits:
			st.Outcome = Allowed
		case r.Action == Count || logOnly:
			st.Outcome = WouldBlock
		default:
			st.Outcome, stopped = Blocked, true
		}
		st.State.Allowed = st.Outcome == Allowed
		if st.Outcome == Allowed {
			// Caps are taken after the limits admit, as decide takes them.
			stopped = e.explainCaps(st, r, key, logOnly)
		}
	}
	return steps
}

// explainCaps looks at rule r's concurrency caps for key without taking
// a slot: it records the requests in flight now and, when a cap is full,
// makes the step's outcome what decide's would be. It reports whether
// evaluation would stop there (an enforced block rule's 503).
func (e *Engine) explainCaps(st *Step, r *Rule, key []byte, logOnly bool) bool {
	if e.Inflight == nil || r.MaxInflight <= 0 && r.MaxInflightPerKey <= 0 {
		return false
	}
	full := false
	if r.MaxInflight > 0 {
		st.InFlight = e.Inflight.Count(r.capKey)
		full = st.InFlight >= r.MaxInflight
	}
	if r.MaxInflightPerKey > 0 {
		st.InFlightPerKey = e.Inflight.Count("key\x1f" + string(key))
		full = full || st.InFlightPerKey >= r.MaxInflightPerKey
	}
	if !full {
		return false
	}
	st.CapFull = true
	st.State.Allowed = false
	st.State.RetryAfter = r.unavailableRetry()
	if r.Action == Count || logOnly {
		st.Outcome = WouldBlock
		return false
	}
	st.Outcome = Unavailable
	return true
}
