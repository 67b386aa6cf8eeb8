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
			continue
		}
		d, err := e.Store.Take(ctx, unsafe.String(unsafe.SliceData(key), len(key)), 0, r.storeLims...)
		if err != nil {
			st.Err = err
			continue
		}
		if d.Remaining < 1 {
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
		case d.Remaining >= 1:
			st.Outcome = Allowed
		case r.Action == Count || logOnly:
			st.Outcome = WouldBlock
		default:
			st.Outcome, stopped = Blocked, true
		}
		st.State.Allowed = st.Outcome == Allowed
	}
	return steps
}
