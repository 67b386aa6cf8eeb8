package rules

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/floodgate/floodgate/internal/config"

	"github.com/floodgate/floodgate/ratelimit"
)

// Outcome is what one rule did with one request; the values are the
// `decision` label of floodgate_rule_decisions_total.
type Outcome uint8

// Outcomes.
const (
	Allowed    Outcome = iota // matched and within its limits (or an allow rule)
	Blocked                   // over a block rule's limit: answered 429
	WouldBlock                // over a count rule's limit, or any block/deny in log-only mode
	Denied                    // a deny rule answered 403
)

var outcomeNames = [...]string{Allowed: "allowed", Blocked: "blocked", WouldBlock: "would_block", Denied: "denied"}

func (o Outcome) String() string { return outcomeNames[o] }

// OutcomeNames lists every Outcome's name.
func OutcomeNames() []string { return outcomeNames[:] }

// An Observer is told every rule a request matched and what the rule did.
// key is the counter key (nil for deny and allow rules); it is only valid
// during the call. err is a condition or store failure: the rule was then
// skipped (fail open) and o is Allowed.
type Observer interface {
	Observe(req *Request, r *Rule, o Outcome, key []byte, d ratelimit.Decision, err error)
}

// Verdict is the result of evaluating a request against a Set.
type Verdict struct {
	// Rule is the rule that answered the request (Action Deny or Block),
	// nil when the request is to be forwarded.
	Rule     *Rule
	Decision ratelimit.Decision
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
	Obs     Observer
}

// Evaluate runs the rules for req in order (see the package comment).
func (e *Engine) Evaluate(ctx context.Context, req *Request) Verdict {
	var v Verdict
	logOnly := e.LogOnly != nil && e.LogOnly.Load()
	for _, r := range e.Set.Rules {
		if r.when != nil {
			out, _, err := r.when.Eval(activation{req})
			if err != nil {
				e.observe(req, r, Allowed, nil, ratelimit.Decision{}, err)
				continue
			}
			if b, ok := out.Value().(bool); !ok || !b {
				continue
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
			e.observe(req, r, Allowed, nil, ratelimit.Decision{}, err)
			continue
		}
		d, err := e.Store.Take(ctx, unsafe.String(unsafe.SliceData(key), len(key)), 1, r.Limits...)
		if err != nil {
			// Fail open: a store failure never becomes a 5xx.
			e.observe(req, r, Allowed, key, ratelimit.Decision{Allowed: true}, err)
			continue
		}
		switch {
		case d.Allowed:
			e.observe(req, r, Allowed, key, d, nil)
			if r.Action == Block && (v.Closest == nil || d.Remaining < v.ClosestDecision.Remaining) {
				v.Closest, v.ClosestDecision = r, d
			}
		case r.Action == Count || logOnly:
			e.observe(req, r, WouldBlock, key, d, nil)
		default:
			e.observe(req, r, Blocked, key, d, nil)
			v.Rule, v.Decision = r, d
			return v
		}
	}
	return v
}

func (e *Engine) observe(req *Request, r *Rule, o Outcome, key []byte, d ratelimit.Decision, err error) {
	if e.Obs != nil {
		e.Obs.Observe(req, r, o, key, d, err)
	}
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
			dst = append(dst, req.HTTP.Method...)
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
