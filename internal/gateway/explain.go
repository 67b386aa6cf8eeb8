package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/internal/rules"
)

// Explanation is what the gateway would do with one request, rule by rule.
// It holds no client address: keys appear as keyed hashes, the
// same ones the decision log writes.
type Explanation struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Route  string `json:"route"`
	// UpstreamPath is the path the upstream would get (the route's
	// rewrite, else Path).
	UpstreamPath string `json:"upstream_path,omitempty"`
	// Fence is the route group whose prefix Path is under, if any: only
	// its routes may take the path.
	Fence   string          `json:"fence,omitempty"`
	Mode    string          `json:"mode"`
	Rules   []ExplainedRule `json:"rules"`
	Verdict string          `json:"verdict"`
}

// ExplainedRule is one rule's part in an Explanation.
type ExplainedRule struct {
	Name    string `json:"name"`
	Action  string `json:"action"`
	Reached bool   `json:"reached"`
	Matched bool   `json:"matched"`
	// KeyType and KeyHash name the counter (count and block rules).
	KeyType string   `json:"key_type,omitempty"`
	KeyHash string   `json:"key_hash,omitempty"`
	Limits  []string `json:"limits,omitempty"`
	// MaxInflight and MaxInflightPerKey are the rule's concurrency caps:
	// requests in flight at once, all keys together and per key; 0 for
	// none.
	MaxInflight       int64 `json:"max_inflight,omitempty"`
	MaxInflightPerKey int64 `json:"max_inflight_per_key,omitempty"`
	// InFlight and InFlightPerKey are the requests in flight now under
	// those caps (this key's, per key), for a matching rule whose limits
	// admit the request; absent otherwise. One at its cap refuses.
	InFlight       *int64 `json:"in_flight,omitempty"`
	InFlightPerKey *int64 `json:"in_flight_per_key,omitempty"`
	// Banned is true while the key is under the rule's ban: the rule
	// refuses it until RetryAfter, whatever its counters say, so no
	// remaining is given.
	Banned bool `json:"banned,omitempty"`
	// Remaining is how many more requests the counter admits now; absent
	// for a rule without limits (a cap only), which has no counter.
	Remaining *int64 `json:"remaining,omitempty"`
	// RetryAfter is the Retry-After, in seconds, of the rule's refusal
	// (blocked or would_block by its limits or ban), as the 429 and the
	// decision log would give it.
	RetryAfter *int64 `json:"retry_after_s,omitempty"`
	// Reset is the RateLimit field's t, in seconds, for the counter as it
	// stands (0: empty), or of the refusal (equal to RetryAfter).
	Reset *int64 `json:"reset_s,omitempty"`
	// Decision is allowed, blocked, would_block or denied for a matching
	// rule; "no match", "not reached" or "error" otherwise.
	Decision string `json:"decision"`
	Error    string `json:"error,omitempty"`
}

// Explain reports what the gateway would do with r, without counting it
// or forwarding it: route, client address, then every rule against the
// live counters (peeked at, not taken).
func (g *Gateway) Explain(ctx context.Context, r *http.Request) Explanation {
	p := cleanPath(r.URL.Path)
	ex := Explanation{Method: r.Method, Path: p, Mode: "enforce"}
	if g.gw.engine.LogOnly != nil && g.gw.engine.LogOnly.Load() {
		ex.Mode = "log-only"
	}
	var st state
	fence, fenced := g.router.Fenced(p)
	if fenced {
		ex.Fence = fence.Group
	}
	route := g.router.Match(r.Method, p, &st.params)
	switch {
	case route == nil && fenced:
		ex.Verdict = "404: under /" + strings.Join(fence.Prefix, "/") + "/ (route group " + fence.Group + "), no route of the group matches"
		return ex
	case route == nil:
		ex.Verdict = "404: no route matches"
		return ex
	}
	ex.Route = route.Name
	ex.UpstreamPath = p
	if len(route.Rewrite.Parts) > 0 {
		ex.UpstreamPath = route.Expand(&st.params)
	}
	// The query as serve filters it before the rules run: parameters the
	// route does not allow are dropped, a value over its cap refused.
	if route.Query != nil {
		q, bad := route.Query.Filter(r.URL.RawQuery)
		if bad != "" {
			ex.Verdict = "400: query parameter " + bad + " over its cap or not a whole number (the route's query.max)"
			return ex
		}
		u := *r.URL
		u.RawQuery = q
		r = r.Clone(ctx)
		r.URL = &u
	}
	ip := g.resolver.Resolve(r.RemoteAddr, r.Header)
	req := &st.req
	req.HTTP, req.Path = r, p
	req.Route, req.RouteGroup = route.Name, route.Group
	req.ClientIP, req.ClientPrefix = ip, g.resolver.KeyPrefix(ip)
	g.identify(r, req, &g.routeSet[route.Index], false)

	ex.Verdict = "forward to upstream " + route.Upstream.Name
	for _, s := range g.gw.engine.Explain(ctx, req) {
		er := ExplainedRule{Name: s.Rule.Name, Action: s.Rule.Action.String(), Reached: s.Reached, Matched: s.Matched,
			MaxInflight: s.Rule.MaxInflight, MaxInflightPerKey: s.Rule.MaxInflightPerKey}
		for _, l := range s.Rule.Limits {
			er.Limits = append(er.Limits, l.String())
		}
		if s.Key != nil {
			er.KeyType, er.KeyHash = s.Rule.KeyType, g.hasher.Hash(s.Key)
		}
		switch {
		case !s.Reached:
			er.Decision = "not reached"
		case s.Err != nil:
			er.Decision, er.Error = "error", s.Err.Error()
		case !s.Matched:
			er.Decision = "no match"
		default:
			er.Decision = s.Outcome.String()
			er.Banned = s.Banned
			if s.Key != nil && len(s.Rule.Limits) > 0 && !s.Banned {
				rem := s.State.Remaining
				er.Remaining = &rem
			}
			if s.Key != nil && (len(s.Rule.Limits) > 0 || s.Rule.Ban > 0) {
				retry, reset := respond.Timing(s.Rule.RetryAfter, s.State)
				if !s.State.Allowed {
					er.RetryAfter = &retry
				}
				er.Reset = &reset
			} else if s.CapFull {
				retry, _ := respond.Timing(s.Rule.RetryAfter, s.State)
				er.RetryAfter = &retry
			}
			if s.Key != nil && (s.Outcome == rules.Allowed || s.CapFull) {
				if s.Rule.MaxInflight > 0 {
					n := s.InFlight
					er.InFlight = &n
				}
				if s.Rule.MaxInflightPerKey > 0 {
					n := s.InFlightPerKey
					er.InFlightPerKey = &n
				}
			}
			switch s.Outcome {
			case rules.Blocked:
				ex.Verdict = "429 by rule " + s.Rule.Name
			case rules.Denied:
				ex.Verdict = "403 by rule " + s.Rule.Name
			case rules.Unavailable:
				ex.Verdict = "503 by rule " + s.Rule.Name + " (its concurrency cap is full)"
			}
		}
		ex.Rules = append(ex.Rules, er)
	}
	// The route's own cap is taken once the rules admit, as in serve.
	if rs := &g.routeSet[route.Index]; strings.HasPrefix(ex.Verdict, "forward") && rs.maxInflight > 0 {
		if n := g.gw.engine.Inflight.Count(rs.capKey); n >= rs.maxInflight {
			ex.Verdict = fmt.Sprintf("503: route %s has %d requests in flight, its max_inflight", route.Name, n)
		}
	}
	return ex
}

// WriteText prints ex for a terminal: one line per rule.
func (ex Explanation) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s %s\n", ex.Method, ex.Path)
	if ex.Route == "" {
		fmt.Fprintf(w, "verdict: %s\n", ex.Verdict)
		return
	}
	fmt.Fprintf(w, "route: %s   mode: %s\n", ex.Route, ex.Mode)
	if ex.UpstreamPath != ex.Path {
		fmt.Fprintf(w, "upstream path: %s\n", ex.UpstreamPath)
	}
	fmt.Fprintln(w)
	for i, r := range ex.Rules {
		line := fmt.Sprintf("%2d. %-28s %-6s %-12s", i+1, r.Name, r.Action, r.Decision)
		var extra []string
		if r.KeyType != "" {
			extra = append(extra, "key "+r.KeyType+" ("+r.KeyHash+")")
		}
		if len(r.Limits) > 0 {
			extra = append(extra, "limit "+strings.Join(r.Limits, " + "))
		}
		if r.MaxInflight > 0 {
			extra = append(extra, fmt.Sprintf("in flight at most %d", r.MaxInflight)+inFlightNow(r.InFlight))
		}
		if r.MaxInflightPerKey > 0 {
			extra = append(extra, fmt.Sprintf("in flight at most %d per key", r.MaxInflightPerKey)+inFlightNow(r.InFlightPerKey))
		}
		if r.Banned {
			extra = append(extra, "banned")
		}
		if r.Remaining != nil {
			extra = append(extra, fmt.Sprintf("remaining %d", *r.Remaining))
		}
		if r.RetryAfter != nil {
			extra = append(extra, fmt.Sprintf("Retry-After %ds", *r.RetryAfter))
		}
		if r.Reset != nil && *r.Reset > 0 {
			extra = append(extra, fmt.Sprintf("t %ds", *r.Reset))
		}
		if r.Error != "" {
			extra = append(extra, "error: "+r.Error)
		}
		// No trailing blanks when a rule has nothing more to say.
		fmt.Fprintln(w, strings.TrimRight(line+" "+strings.Join(extra, ", "), " "))
	}
	fmt.Fprintf(w, "\nverdict: %s\n", ex.Verdict)
}

// inFlightNow says how many requests are in flight under a cap, when any
// are.
func inFlightNow(n *int64) string {
	if n == nil || *n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d now)", *n)
}
