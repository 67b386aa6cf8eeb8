package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

func init() {
	register("validate", 20, "--config FILE [--env NAME]", runValidate)
}

func runValidate(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "validate", "--config FILE [--env NAME]")
	file := fs.String("config", "", "configuration `file` (required)")
	envName := fs.String("env", "", "environment `name` to apply from the file's environments")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("--config is required")}
	}
	f, _, err := load(env, *file, *envName)
	if err != nil {
		return err
	}
	printEffective(env.stdout, f)
	return nil
}

// load reads, defaults, validates and compiles a configuration on the
// same path `serve` uses. On problems it prints every one to stderr and
// returns errReported.
func load(env environ, file, envName string) (*config.File, *gateway.Gateway, error) {
	f, err := config.Load(file, envName, env.lookup)
	if err := envError(f, "--env"); err != nil {
		return nil, nil, err
	}
	var loadProblems config.Problems
	if err != nil {
		if !errors.As(err, &loadProblems) || f == nil {
			return nil, nil, err
		}
	}
	// The header's warning is for a header the file names: the default
	// one, filled in below, is no choice of the operator's.
	headerNamed := f.Config.ClientIP.Header != ""
	f.Config.ApplyDefaults()
	g, problems := compileCheck(f)
	if problems = dedupe(append(loadProblems, problems...)); len(problems) > 0 {
		reportProblems(env.stderr, file, problems)
		return nil, nil, errReported
	}
	if o, err := gateway.ClientIPOptions(&f.Config); err == nil {
		if !headerNamed {
			o.Header = ""
		}
		for _, w := range clientip.Warnings(o) {
			fmt.Fprintf(env.stderr, "%s: warning: client_ip: %s\n", file, w)
		}
	}
	if f.Config.DecideEnabled() && strings.EqualFold(f.Config.ClientIP.Header, clientip.Forwarded) {
		// nginx (as docs/decide.md configures it), Caddy, Traefik and
		// Envoy write X-Forwarded-For and pass a client's Forwarded on
		// as it came: unless something trusted writes Forwarded, its
		// rightmost entry is the client's choice.
		fmt.Fprintf(env.stderr, "%s: warning: client_ip: header Forwarded on the decision listener: the proxies docs/decide.md shows set X-Forwarded-For and pass on a client's Forwarded as it came, so unless the proxy (or a trusted proxy in front of it) writes Forwarded itself, a client chooses its own address by sending one\n", file)
	}
	for _, w := range sharedKeyWarnings(f) {
		fmt.Fprintf(env.stderr, "%s:%d: warning: %s: %s\n", file, f.Line(w.Field), w.Field, w.Msg)
	}
	return f, g, nil
}

// sharedKeyWarnings warns about counting rules keyed by a header or query
// parameter whose condition does not name it: every request without it
// shares one counter (docs/rules.md), so in a per-API-key rule all the
// clients that send no key exhaust one limit together. A condition that
// names the header or parameter (in a test such as 'x-api-key' in
// request.headers) is taken to limit the rule to requests that have it,
// and a key that also tells clients apart another way (by address, by
// visitor cookie, by API client, by an expression) keeps them apart
// without it.
func sharedKeyWarnings(f *config.File) []config.Problem {
	var out []config.Problem
	for i, r := range f.Config.Rules {
		if r.Action != config.ActionBlock && r.Action != config.ActionCount || r.LimitsFrom != "" ||
			slices.ContainsFunc(r.Key, tellsClientsApart) {
			continue
		}
		for j, k := range r.Key {
			kp, err := config.ParseKey(k)
			if err != nil || kp.Kind != config.KeyHeader && kp.Kind != config.KeyQuery {
				continue
			}
			name, where, what := strings.ToLower(kp.Arg), "request.headers", "header"
			if kp.Kind == config.KeyQuery {
				name, where, what = kp.Arg, "request.query", "query parameter"
			}
			if strings.Contains(r.When, "'"+name+"'") || strings.Contains(r.When, `"`+name+`"`) {
				continue
			}
			out = append(out, config.Problem{
				Field: fmt.Sprintf("rules[%d].key[%d]", i, j),
				Msg: fmt.Sprintf("every request without the %s %s shares one counter of rule %s, so the clients that send none are limited together; to count only requests that send it, add when: \"'%s' in %s\"",
					what, kp.Arg, r.Name, name, where),
			})
		}
	}
	return out
}

// tellsClientsApart reports whether key characteristic k gives clients
// counters of their own whether or not they send a header: anything but
// the request's header, query, path, route, method and host, which many
// clients share.
func tellsClientsApart(k string) bool {
	kp, err := config.ParseKey(k)
	if err != nil {
		return false
	}
	switch kp.Kind {
	case config.KeyHeader, config.KeyQuery, config.KeyPath, config.KeyRoute, config.KeyMethod, config.KeyHost:
		return false
	}
	return true
}

// compileCheck compiles f, defaults applied, as serve would but against a
// store of its own, so that the problems only compiling finds (conditions,
// limits, keys) are found in a file that also has others. gateway.New
// leaves out the problems with a field loading or validating already
// found wrong: they follow from it.
func compileCheck(f *config.File) (*gateway.Gateway, config.Problems) {
	return gateway.New(f, gateway.Options{
		Store:   memory.New(memory.Options{MaxKeys: f.Config.Store.MaxKeys}),
		Metrics: telemetry.NewMetrics("validate"),
		Logger:  slog.New(slog.DiscardHandler),
	})
}

// reportProblems prints every problem of file, one a line, then their count.
func reportProblems(w io.Writer, file string, problems config.Problems) {
	fmt.Fprintln(w, problems.Error())
	fmt.Fprintf(w, "%s: %d problem%s\n", file, len(problems), plural(len(problems)))
}

// dedupe drops repeated problems (a field reported by two stages).
func dedupe(ps config.Problems) config.Problems {
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		if s := p.Error(); !seen[s] {
			seen[s] = true
			out = append(out, p)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// printEffective prints the effective configuration in a form an operator
// can check at a glance: what listens where, who the client is, and every
// rule in evaluation order.
func printEffective(w io.Writer, f *config.File) {
	// Its output goes where commands' output goes (CI logs, the journal
	// through ExecStartPre): no credential in it.
	redacted := config.Redacted(f.Config)
	c := &redacted
	env := f.Env
	if env == "" {
		env = "none"
	}
	fmt.Fprintf(w, "%s: ok (environment: %s)\n\n", f.Name, env)
	fmt.Fprintf(w, "mode:      %s\n", c.Mode)
	fmt.Fprintf(w, "listen:    %s\n", c.Listen)
	fmt.Fprintf(w, "admin:     %s\n", c.Admin.Listen)
	if c.InternalEnabled() {
		counted := "not counted"
		if c.Internal.EvaluateRules {
			counted = "rules apply"
		}
		fmt.Fprintf(w, "internal:  %s (%s)\n", c.Internal.Listen, counted)
	}
	if c.Store.URL == config.StoreMemory {
		fmt.Fprintf(w, "store:     %s (max %d keys)\n", c.Store.URL, c.Store.MaxKeys)
	} else {
		fmt.Fprintf(w, "store:     %s (failure_policy %s)\n", c.Store.URL, c.Store.FailurePolicy)
	}
	switch {
	case len(c.ClientIP.TrustedProxies) > 0:
		fmt.Fprintf(w, "client ip: rightmost %s entry not from a trusted proxy (%s)\n",
			c.ClientIP.Header, strings.Join(c.ClientIP.TrustedProxies, ", "))
	case c.ClientIP.TrustedHops > 0:
		fmt.Fprintf(w, "client ip: %s entry %d from the right\n", c.ClientIP.Header, c.ClientIP.TrustedHops)
	default:
		fmt.Fprintf(w, "client ip: peer address (no trusted proxies)\n")
	}
	fmt.Fprintf(w, "           keys group IPv4 by /%d, IPv6 by /%d\n", c.ClientIP.IPv4Prefix, c.ClientIP.IPv6Prefix)

	fmt.Fprintf(w, "\nupstreams:\n")
	names := make([]string, 0, len(c.Upstreams))
	for n := range c.Upstreams {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		u := c.Upstreams[n]
		auth := ""
		switch a := u.Auth; {
		case a.Type == config.AuthClientCredentials && a.ClientID == "":
			auth = " (no credentials: auth.optional)"
		case a.Type == config.AuthClientCredentials:
			auth = " (OAuth2 client credentials from " + a.TokenURL + ")"
		case a.Type == config.AuthHeader:
			auth = " (header " + a.HeaderName + ")"
		}
		if a := u.Auth.APIClient; a != "" {
			auth += ", counted as API client " + a
		}
		fmt.Fprintf(w, "  %-12s %s%s\n", n, u.URL, auth)
	}
	if c.SessionsEnabled() {
		s := c.Sessions
		fmt.Fprintf(w, "\nsessions:  cookie %s, max age %s, %d signing secret(s)\n", s.Cookie, s.MaxAge, len(config.SplitSecrets(s.Secret)))
		fmt.Fprintf(w, "           issued when: %s\n", strings.Join(strings.Fields(s.IssueWhen), " "))
		if s.PerIP.MaxNew > 0 {
			fmt.Fprintf(w, "           at most %d new per address per %s\n", s.PerIP.MaxNew, s.PerIP.Window)
		}
	}
	if len(c.APIClients.Plans) > 0 {
		fmt.Fprintf(w, "\nplans:\n")
		plans := make([]string, 0, len(c.APIClients.Plans))
		for n := range c.APIClients.Plans {
			plans = append(plans, n)
		}
		slices.Sort(plans)
		for _, n := range plans {
			limits := strings.Join(c.APIClients.Plans[n], " + ")
			if limits == "" {
				limits = "no limits"
			}
			var clients []string
			for _, cl := range c.APIClients.Clients {
				if cl.Plan == n {
					clients = append(clients, cl.ID)
				}
			}
			fmt.Fprintf(w, "  %-12s %s", n, limits)
			if len(clients) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(clients, ", "))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "\nroutes (first match wins):\n")
	for _, r := range c.Routes {
		methods := ""
		if len(r.Methods) > 0 {
			methods = strings.Join(r.Methods, ",") + " "
		}
		to := r.Upstream
		if r.Rewrite != "" {
			to += " " + r.Rewrite
		}
		var extra []string
		if r.TrailingSlash == "optional" {
			extra = append(extra, "trailing slash optional")
		}
		if r.MaxInflight > 0 {
			extra = append(extra, fmt.Sprintf("max %d in flight", r.MaxInflight))
		}
		if t := r.Timeouts; t != (config.Timeouts{}) {
			extra = append(extra, "timeouts "+formatTimeouts(t))
		}
		suffix := ""
		if len(extra) > 0 {
			suffix = " (" + strings.Join(extra, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-12s %s%s -> %s%s\n", r.Name, methods, r.Path, to, suffix)
	}
	for _, name := range slices.Sorted(maps.Keys(c.RouteGroups)) {
		fmt.Fprintf(w, "  under %s: group %s's routes only; 404 when none matches\n", c.RouteGroups[name].Prefix, name)
	}
	fmt.Fprintf(w, "\nrules (in evaluation order):\n")
	if len(c.Rules) == 0 {
		fmt.Fprintf(w, "  none: every routed request is forwarded\n")
	}
	for i, r := range c.Rules {
		fmt.Fprintf(w, "  %d. %s: %s", i+1, r.Name, r.Action)
		if len(r.Limits) > 0 {
			fmt.Fprintf(w, " %s per %s (%s)", strings.Join(r.Limits, " + "), strings.Join(r.Key, "+"), r.Algorithm)
		}
		if r.LimitsFrom == config.LimitsFromPlan {
			fmt.Fprintf(w, " the client's plan per %s (%s)", strings.Join(r.Key, "+"), r.Algorithm)
		}
		if r.Cost != "" && r.Cost != config.CostRequests {
			fmt.Fprintf(w, ", cost %s", r.Cost)
		}
		if len(r.Candidates) > 0 {
			fmt.Fprintf(w, ", candidates %s", strings.Join(r.Candidates, " "))
		}
		if r.MaxInflight > 0 {
			fmt.Fprintf(w, ", max %d in flight", r.MaxInflight)
		}
		if r.MaxInflightPerKey > 0 {
			fmt.Fprintf(w, ", max %d in flight per key", r.MaxInflightPerKey)
		}
		if r.Ban != "" {
			fmt.Fprintf(w, ", ban %s", r.Ban)
		}
		if r.RetryAfter != "" {
			fmt.Fprintf(w, ", Retry-After %s", r.RetryAfter)
		}
		fmt.Fprintln(w)
		if r.CountWhen != "" {
			fmt.Fprintf(w, "     counts when: %s\n", strings.Join(strings.Fields(r.CountWhen), " "))
		}
		fmt.Fprintf(w, "     when: %s\n", strings.Join(strings.Fields(r.When), " "))
	}
	if c.DecideEnabled() {
		printDecide(w, c)
	}
}

// printDecide says what the decision listener enforces: every rule and
// route cap but those that need the response, listed with why; and the
// route settings that change the forwarded request, which the proxy
// forwards itself.
func printDecide(w io.Writer, c *config.Config) {
	fmt.Fprintf(w, "\ndecision listener: %s (protocol %s), answering %s only\n", c.Decide.Listen, c.Decide.Protocol,
		strings.Join(c.ClientIP.TrustedProxies, ", "))
	var skipped []string
	for _, r := range c.Rules {
		if why := rules.NeedsResponse(&r); why != "" {
			skipped = append(skipped, fmt.Sprintf("rule %s: %s", r.Name, why))
		}
	}
	// What the gateway does to the request it forwards: the proxy
	// forwards the request itself, as the client sent it.
	var forwarding []string
	for _, r := range c.Routes {
		if r.MaxInflight > 0 {
			skipped = append(skipped, fmt.Sprintf("route %s max_inflight: a concurrency cap holds its slot until the response, whose end the proxy does not report", r.Name))
		}
		if len(r.Query.Allow) > 0 {
			forwarding = append(forwarding, fmt.Sprintf("route %s query.allow: the upstream gets every query parameter the client sent (the rules see only the allowed ones)", r.Name))
		}
		if len(r.Query.Max) > 0 && r.Query.OverMax == "drop" {
			forwarding = append(forwarding, fmt.Sprintf("route %s query.over_max drop: a value over query.max reaches the upstream (the rules do not see it)", r.Name))
		}
		if r.Rewrite != "" {
			forwarding = append(forwarding, fmt.Sprintf("route %s rewrite: the upstream gets the path the proxy sends, not %s", r.Name, r.Rewrite))
		}
		if r.MaxBodyBytes > 0 {
			forwarding = append(forwarding, fmt.Sprintf("route %s max_body_bytes: the proxy sends no body to decide on; bound bodies in the proxy (nginx client_max_body_size)", r.Name))
		}
	}
	if len(skipped) == 0 {
		fmt.Fprintf(w, "  every rule is enforced there\n")
	} else {
		fmt.Fprintf(w, "  not enforced there (the gateway listener enforces them):\n")
		for _, s := range skipped {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
	if len(forwarding) > 0 {
		fmt.Fprintf(w, "  done only when floodgate forwards (the proxy forwards the client's request as it came):\n")
		for _, s := range forwarding {
			fmt.Fprintf(w, "  - %s\n", s)
		}
	}
}

func formatTimeouts(t config.Timeouts) string {
	var parts []string
	for _, p := range []struct{ name, v string }{{"connect", t.Connect}, {"response header", t.ResponseHeader}, {"total", t.Total}} {
		if p.v != "" {
			parts = append(parts, p.name+" "+p.v)
		}
	}
	return strings.Join(parts, ", ")
}
