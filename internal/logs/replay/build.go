package replay

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/proxy"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
)

// AdHocName is the name of the rule a `--limit` flag adds: "100/5m" gives
// "limit-100-per-5m".
func AdHocName(l ratelimit.Limit) string {
	return "limit-" + strconv.FormatInt(l.Count, 10) + "-per-" + ratelimit.FormatWindow(l.Window)
}

// AdHocRules compiles one rule per limit ("N/WINDOW"), as `--limit` adds
// them: a count rule (a shadow: it never stops evaluation) on every
// request, keyed by client address, with algorithm alg ("" for the
// default, sliding_window). The rules are compiled from a generated
// configuration on the same path as a configuration file's.
func AdHocRules(limits []string, alg string) (*rules.Set, error) {
	a, err := ratelimit.ParseAlgorithm(alg)
	if err != nil {
		return nil, err
	}
	var y strings.Builder
	y.WriteString("upstreams: {replay: {url: 'http://127.0.0.1:1'}}\nrules:\n")
	seen := map[string]bool{}
	for _, s := range limits {
		l, err := ratelimit.ParseLimitAs(s, a)
		if err != nil {
			return nil, fmt.Errorf("--limit %s: %w", s, err)
		}
		name := AdHocName(l)
		if seen[name] {
			return nil, fmt.Errorf("--limit %s: given twice", s)
		}
		seen[name] = true
		fmt.Fprintf(&y, "  - {name: %s, action: count, key: [ip], limits: [%s], algorithm: %s}\n",
			strconv.Quote(name), strconv.Quote(l.String()), a)
	}
	f, err := config.Parse("--limit", []byte(y.String()), "", func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, err
	}
	f.Config.ApplyDefaults()
	if ps := f.Validate(); len(ps) > 0 {
		return nil, ps
	}
	set, ps := rules.Compile(f)
	if len(ps) > 0 {
		return nil, ps
	}
	return set, nil
}

// Merge returns a set with the rules of sets in order. It fails if two
// rules share a name: their counters would be one.
func Merge(sets ...*rules.Set) (*rules.Set, error) {
	out := &rules.Set{}
	seen := map[string]bool{}
	for _, s := range sets {
		if s == nil {
			continue
		}
		for _, r := range s.Rules {
			if seen[r.Name] {
				return nil, fmt.Errorf("two rules are named %q", r.Name)
			}
			seen[r.Name] = true
			out.Rules = append(out.Rules, r)
		}
	}
	out.ShareConditions() // the sets numbered theirs apart
	return out, nil
}

// Routes returns the routes of a validated configuration, matched as the
// gateway matches them (first match wins, methods respected).
func Routes(c *config.Config) *proxy.Router {
	rt := &proxy.Router{}
	for i, rc := range c.Routes {
		pt, err := config.ParseRoutePattern(rc.Path)
		if err != nil {
			continue
		}
		methods := rc.MatchMethods()
		rt.Routes = append(rt.Routes, &proxy.Route{Index: i, Name: rc.Name, Group: rc.Group, Pattern: pt, Methods: methods})
	}
	return rt
}

// RouteAPIClients returns, by route index, the API client that the
// gateway counts each request of the route as because the route's
// upstream has floodgate's own credentials with auth.api_client ("" for
// none): what the gateway's identification gives before any bearer
// token.
func RouteAPIClients(c *config.Config) []string {
	ids := make([]string, len(c.Routes))
	known := map[string]bool{}
	for _, cl := range c.APIClients.Clients {
		known[cl.ID] = true
	}
	for i, rc := range c.Routes {
		if id := c.Upstreams[rc.Upstream].Auth.APIClient; known[id] {
			ids[i] = id
		}
	}
	return ids
}
