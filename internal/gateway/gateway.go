// Package gateway assembles floodgate's public request path from a
// configuration: route match, client address, rule evaluation, and either
// an answer of floodgate's own (package respond) or the upstream's.
package gateway

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/proxy"
	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/upstreamauth"
	"github.com/floodgate/floodgate/ratelimit"
)

// sortedNames returns m's keys in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Options are what a Gateway takes from outside its configuration.
type Options struct {
	// Store counts events; it outlives configurations (reloads keep it).
	Store ratelimit.Store
	// Metrics receives every measurement; required.
	Metrics *telemetry.Metrics
	// Logger writes the decision log; required.
	Logger *slog.Logger
	// KeyHasher hashes counter keys for the log; nil draws a random key.
	KeyHasher *telemetry.KeyHasher
	// LogOnly is the run-time mode switch, shared by successive Gateways
	// (see Server). Nil: a switch of the Gateway's own, set from the
	// configuration's mode.
	LogOnly *atomic.Bool
	// Inflight counts requests in flight for concurrency caps, shared by
	// successive Gateways. Nil: a table of the Gateway's own.
	Inflight *rules.Inflight
	// Now is the clock that measures upstream time (latency metrics and
	// upstream_seconds costs). Nil: time.Now.
	Now func() time.Time
	// AccessLog, if set, receives one record per request that matched a
	// route (log.access).
	AccessLog *telemetry.AccessLog
	// Shared holds the token caches and the sessions-per-address tracker
	// across reloads. Nil: the Gateway's own.
	Shared *Shared
	// Failures logs upstream and store failures, rate-limited, and counts
	// upstream failures; shared by successive Gateways (see Server). Nil:
	// one of the Gateway's own, on Logger and Metrics.
	Failures *telemetry.Failures
}

// Gateway is the public listener's http.Handler for one configuration. It
// is immutable after New and safe for concurrent use.
type Gateway struct {
	router proxy.Router
	// gw is the gateway's own engine and route metrics; decide, the
	// decision listener's (nil when it is off).
	gw       lane
	decide   *decider
	resolver *clientip.Resolver
	answers  *respond.Writer
	ruleAns  []*respond.Rule // by rule index
	rlOnOK   bool            // RateLimit fields on forwarded responses
	metrics  *telemetry.Metrics
	hasher   *telemetry.KeyHasher
	clock    clock
	access   *telemetry.AccessLog
	file     *config.File
	upstream []*proxy.Upstream
	routeSet []routeSettings // by route index
	sessions *sessions       // nil: sessions off
	// stripSession removes upstream Set-Cookie fields for the session
	// cookie; nil when sessions are off.
	stripSession func(http.Header)
	clients      apiClients
	// tokens are the token sources of the upstreams with floodgate's own
	// client credentials, by upstream name (checkTokens).
	tokens []upstreamToken
	// internalRules runs the rules for internal requests too.
	internalRules bool
	failures      *telemetry.Failures
	pool          sync.Pool

	// maxURI bounds the request target (server.max_uri_bytes);
	// bodyTimeout is server.body_read_timeout and bufferBytes
	// server.request_buffer_bytes.
	maxURI      int
	bodyTimeout time.Duration
	bufferBytes int64
}

// routeSettings are a route's caps and timeouts, resolved at load.
type routeSettings struct {
	name          string // the route's, for the log
	maxInflight   int64
	capKey        string
	total         time.Duration
	timeoutStatus int
	retryAfter    time.Duration
	// client is the API client requests forwarded with the upstream's
	// own credentials count as (auth.api_client); id "" for none.
	client apiClient
	// maxBody bounds a request body (max_body_bytes); buffer reads it
	// whole before forwarding (request_buffering: on).
	maxBody int64
	buffer  bool
	// overMax answers a value over a query parameter's cap (query.max),
	// naming the parameter and its range, by parameter.
	overMax map[string]*respond.Rule
}

var _ http.Handler = (*Gateway)(nil)

// state is the per-request scratch space, pooled.
type state struct {
	req    rules.Request
	params proxy.Params
	w      statusWriter
	buf    []byte
	// upstream is the time forwarding took; forwarded, that it was.
	upstream  time.Duration
	forwarded bool
	// unread: the request declared a body, which its end may leave
	// unread (boundUnreadBody).
	unread bool
	// The decision listener's: the original request, rebuilt from the
	// asking one, and the writer of nginx's answers.
	orig  http.Request
	nginx nginxAnswer
}

// finish makes the counts that depend on the response and releases the
// request's concurrency slots, when it has any.
func (g *Gateway) finish(st *state) {
	if !st.req.Pending() {
		return
	}
	sw := &st.w
	// Not the request's context: counts after the response are made even
	// when the client has gone (the store bounds its own wait).
	g.gw.engine.Finish(context.Background(), &st.req, rules.Response{
		Status: sw.statusOr200(), Header: sw.ResponseWriter.Header(), Upstream: st.upstream, Bytes: sw.bytes,
		Forwarded: st.forwarded && sw.code != 0 && !sw.own,
		Sent:      st.forwarded && (sw.code != 0 && !sw.own || sw.sent),
	})
}

// New builds the Gateway for a loaded configuration: f must have had
// ApplyDefaults, and New runs Validate and compiles everything, reporting
// every problem at once. It starts nothing: listeners are the caller's.
func New(f *config.File, o Options) (*Gateway, config.Problems) {
	c := &f.Config
	validated := f.Validate()
	// What compiling finds, but what Validate already said.
	cp := newCompileProblems(f, validated)
	g := &Gateway{metrics: o.Metrics}
	if o.Failures == nil {
		o.Failures = telemetry.NewFailures(o.Logger, o.Metrics, telemetry.LogLimiterOptions{})
	}
	g.failures = o.Failures

	set, ps := rules.Compile(f)
	cp.addProblems(ps)

	// Client address: each trusted proxy entry's problem at the entry.
	ipOpts, err := ClientIPOptions(c)
	for _, e := range leaves(err) {
		if pe, ok := errors.AsType[*clientip.PrefixError](e); ok {
			cp.add("client_ip.trusted_proxies["+strconv.Itoa(pe.Index)+"]", fmt.Errorf("%q: %w", pe.Entry, pe.Err))
		} else {
			cp.add("client_ip", e)
		}
	}
	if err == nil {
		g.resolver, err = clientip.New(ipOpts)
		cp.add("client_ip", err)
	}

	// Answers.
	var cors respond.CORS
	if c.Responses.CORS.AllowOrigin != "" {
		cors.AllowOrigins = []string{c.Responses.CORS.AllowOrigin}
		cors.ExposeHeaders = c.Responses.CORS.ExposeHeaders
	} else if len(c.Responses.CORS.ExposeHeaders) > 0 {
		// Without an origin no answer carries CORS fields: the headers
		// would be listed for no one, and the file would say otherwise.
		cp.add("responses.cors.expose_headers", errors.New("expose_headers needs allow_origin: without it answers carry no CORS fields and expose nothing; set allow_origin, or remove expose_headers"))
	}
	g.answers, err = respond.NewWriter(respond.Options{
		CORS:                cors,
		OmitRateLimitFields: c.Responses.RateLimitHeaders == "never",
	})
	cp.add("responses", err)
	g.rlOnOK = c.Responses.RateLimitHeaders == "always" || c.Responses.RateLimitHeaders == ""
	if set != nil {
		for i, r := range set.Rules {
			spec := respond.RuleSpec{Name: r.Name, RetryAfter: r.RetryAfter}
			for _, l := range r.Limits {
				spec.Limits = append(spec.Limits, l.String())
				name := r.Name
				if len(r.Limits) > 1 {
					name += "-" + ratelimit.FormatWindow(l.Window)
				}
				spec.Policies = append(spec.Policies, respond.Policy{Name: name, Quota: l.Count, Window: l.Window})
			}
			if len(r.Message) > 0 {
				m, err := respond.CompileMessage(r.Message)
				cp.addMessage(i, err)
				spec.Message = m
			}
			ra, err := respond.NewRule(spec)
			cp.addRule(i, err)
			g.ruleAns = append(g.ruleAns, ra)
		}
	}

	// Identities: sessions and API clients.
	if o.Shared == nil {
		o.Shared = new(Shared)
	}
	g.clock = clock{now: o.Now}
	if o.Now == nil {
		o.Now = time.Now
	}
	g.sessions, ps = newSessions(f, o, o.Shared)
	cp.addProblems(ps)
	g.clients = newAPIClients(c)
	g.internalRules = c.Internal.EvaluateRules
	g.maxURI = cmp.Or(c.Server.MaxURIBytes, config.DefaultMaxURIBytes)
	g.bufferBytes = cmp.Or(c.Server.RequestBufferBytes, config.DefaultRequestBufferBytes)
	g.bodyTimeout, _ = config.ParseTimeout(cmp.Or(c.Server.BodyReadTimeout, config.DefaultBodyReadTimeout))
	if g.sessions != nil {
		// floodgate owns the session cookie: no upstream sets it (see
		// statusWriter.WriteHeader).
		g.stripSession = g.sessions.m.StripSetCookie
	}
	creds := map[string]forward.Credential{}
	for _, name := range sortedNames(c.Upstreams) {
		cred, src, err := authCredential(f, name, o, o.Shared)
		cp.add(config.JoinKey(config.JoinKey("upstreams", name), "auth"), err)
		if cred != nil {
			creds[name] = cred
		}
		if src != nil {
			g.tokens = append(g.tokens, upstreamToken{upstream: name, src: src})
		}
	}

	// Upstreams and routes. Each distinct (upstream, connect timeout,
	// response-header timeout) gets its own pooled transport; routes with
	// the same settings share it.
	ups := map[string]*proxy.Upstream{}
	upstreamFor := func(name string, t upstreamTimeouts) *proxy.Upstream {
		k := fmt.Sprintf("%s|%s|%s", name, t.connect, t.header)
		if up, ok := ups[k]; ok {
			return up
		}
		u, err := url.Parse(c.Upstreams[name].URL)
		if err != nil {
			return nil // Validate reported it
		}
		onError := func(w http.ResponseWriter, r *http.Request, err error) { g.upstreamError(w, r, err, name) }
		onBodyError := func(w http.ResponseWriter, r *http.Request, err error) { g.upstreamFailed(w, r, err, name) }
		up := proxy.NewUpstream(name, u, proxy.UpstreamOptions{
			OnError: onError, OnBodyError: onBodyError, ConnectTimeout: t.connect, ResponseHeaderTimeout: t.header,
			Credential:    creds[name],
			Reuse:         reuseMode(c.Upstreams[name].ConnectionReuse),
			OnUnsolicited: unsolicited(name, o),
		})
		o.Failures.InitUpstream(name, proxy.UpstreamFailures())
		ups[k] = up
		g.upstream = append(g.upstream, up)
		return up
	}
	for i, rc := range c.Routes {
		pt, err := config.ParseRoutePattern(rc.Path)
		if err != nil {
			continue
		}
		pt.OptionalSlash = rc.TrailingSlash == "optional"
		var tmpl config.Template
		if rc.Rewrite != "" {
			if tmpl, err = config.ParseRewrite(rc.Rewrite, pt); err != nil {
				continue
			}
		}
		methods := rc.MatchMethods()
		t := resolveTimeouts(c.Upstreams[rc.Upstream].Timeouts, rc.Timeouts)
		rs := routeSettings{
			name: rc.Name, maxInflight: int64(rc.MaxInflight), capKey: "route\x1f" + rc.Name,
			total: t.total, timeoutStatus: rc.TimeoutStatus, retryAfter: defaultCapacityRetry,
			maxBody: cmp.Or(rc.MaxBodyBytes, c.Server.MaxBodyBytes, config.DefaultMaxBodyBytes), buffer: rc.RequestBuffering == config.BufferingOn,
		}
		if rc.RetryAfter != "" {
			rs.retryAfter, _ = config.ParseRetryAfter(rc.RetryAfter)
		}
		if rc.Query.OverMax != "drop" {
			for name, max := range rc.Query.Max {
				if r := overMaxAnswer(name, max); r != nil {
					if rs.overMax == nil {
						rs.overMax = map[string]*respond.Rule{}
					}
					rs.overMax[name] = r
				}
			}
		}
		if id := c.Upstreams[rc.Upstream].Auth.APIClient; id != "" {
			rs.client = g.clients.byID[id]
		}
		g.routeSet = append(g.routeSet, rs)
		route := &proxy.Route{
			Index: i, Name: rc.Name, Group: rc.Group, Pattern: pt, Methods: methods,
			Rewrite: tmpl, Upstream: upstreamFor(rc.Upstream, t),
		}
		for name, c := range rc.Params {
			if vals := c.Values(); vals != nil {
				if route.Values == nil {
					route.Values = map[string]map[string]string{}
				}
				route.Values[name] = vals
				continue
			}
			if m, err := config.ParamMatcher(c.Constraint()); err == nil {
				if route.Constraints == nil {
					route.Constraints = map[string]func(string) bool{}
				}
				route.Constraints[name] = m
			}
		}
		if q := rc.Query; len(q.Allow) > 0 || len(q.Max) > 0 {
			route.Query = &proxy.QueryFilter{Max: q.Max, DropOverMax: q.OverMax == "drop"}
			if len(q.Allow) > 0 {
				route.Query.Allow = map[string]bool{}
				for _, a := range q.Allow {
					route.Query.Allow[a] = true
				}
			}
		}
		g.router.Routes = append(g.router.Routes, route)
		g.gw.routes = append(g.gw.routes, o.Metrics.ForRoute(rc.Name, telemetry.ListenerGateway))
	}
	for _, name := range slices.Sorted(maps.Keys(c.RouteGroups)) {
		if prefix, err := config.ParsePrefix(c.RouteGroups[name].Prefix); err == nil {
			g.router.Fences = append(g.router.Fences, proxy.Fence{Group: name, Prefix: prefix})
		}
	}
	g.gw.noRoute = o.Metrics.ForRoute("", telemetry.ListenerGateway)

	if problems := append(validated, cp.problems...); len(problems) > 0 {
		return nil, problems
	}
	g.hasher = o.KeyHasher
	if g.hasher == nil {
		g.hasher = telemetry.NewKeyHasher("")
	}
	logOnly := o.LogOnly
	if logOnly == nil {
		logOnly = new(atomic.Bool)
		logOnly.Store(c.Mode == config.ModeLogOnly)
		o.Metrics.SetMode(logOnly.Load())
	}
	if o.Inflight == nil {
		o.Inflight = new(rules.Inflight)
	}
	g.gw.engine = rules.Engine{
		Inflight: o.Inflight,
		Set:      set,
		Store:    o.Metrics.InstrumentStore(o.Store, o.Failures),
		LogOnly:  logOnly,
		Obs:      telemetry.NewDecisions(o.Metrics.ForRules(set, telemetry.ListenerGateway), o.Logger, c.Log.Decisions, g.hasher, o.Failures),
	}
	g.decide = newDecider(g, c, o)
	g.access = o.AccessLog
	g.file = f
	g.pool.New = func() any { return new(state) }
	return g, nil
}

// Config returns the configuration the Gateway was built from.
func (g *Gateway) Config() *config.File { return g.file }

// closeIdle closes the idle upstream connections of a Gateway that has
// been replaced; requests still in flight keep theirs.
func (g *Gateway) closeIdle() {
	for _, u := range g.upstream {
		u.CloseIdle()
	}
}

// upstreamTimeouts are a route's effective timeouts.
type upstreamTimeouts struct{ connect, header, total time.Duration }

// resolveTimeouts applies a route's overrides to its upstream's timeouts
// (Validate has checked them all).
func resolveTimeouts(up, route config.Timeouts) upstreamTimeouts {
	pick := func(r, u string) time.Duration {
		if r == "" {
			r = u
		}
		d, _ := config.ParseTimeout(r)
		return d
	}
	return upstreamTimeouts{
		connect: pick(route.Connect, up.Connect),
		header:  pick(route.ResponseHeader, up.ResponseHeader),
		total:   pick(route.Total, up.Total),
	}
}

// ClientIPOptions turns the client_ip section into clientip.Options.
func ClientIPOptions(c *config.Config) (clientip.Options, error) {
	prefixes, err := clientip.ParsePrefixes(c.ClientIP.TrustedProxies)
	return clientip.Options{
		TrustedProxies: prefixes,
		TrustedHops:    c.ClientIP.TrustedHops,
		Header:         c.ClientIP.Header,
		IPv4Prefix:     c.ClientIP.IPv4Prefix,
		IPv6Prefix:     c.ClientIP.IPv6Prefix,
	}, err
}

// ServeHTTP handles one public request.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.serve(w, r, false) }

// Refused counts an answer the server gave a request itself, without
// the Gateway (h1server.RefusalObserver: a protocol refusal such as 400,
// 431 or 501), under no route: floodgate_requests_total counts every
// answer sent on the listener. Such a request reached no route or rule,
// and has no access-log record, as one with no route has none.
func (g *Gateway) Refused(code int) { g.gw.noRoute.Request(code) }

// ServeInternal handles one request of the internal listener: the same
// routes and upstreams, not counted unless internal.evaluate_rules, and
// never given a session.
func (g *Gateway) ServeInternal(w http.ResponseWriter, r *http.Request) { g.serve(w, r, true) }

func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, internal bool) {
	g.metrics.Inflight().Inc()
	defer g.metrics.Inflight().Dec()
	st := g.pool.Get().(*state)
	defer g.release(st)

	st.w.reset(w)
	sw := &st.w
	// A body left unread has its wait bounded when the request ends, in
	// release rather than by a defer of its own (see forward).
	st.unread = r.ContentLength != 0

	if len(r.RequestURI) > g.maxURI {
		// As for a body too large: whatever follows the head is left
		// unread, and the connection ends after the answer.
		endAfterAnswer(sw)
		g.answers.Write(sw, r, respond.Answer{Kind: respond.URITooLong})
		g.gw.noRoute.Request(sw.code)
		return
	}
	peer := clientip.Peer(r.RemoteAddr)
	req, route, rm, rs, ok := g.admit(sw, r, st, peer, internal, &g.gw, r)
	if !ok {
		return
	}
	var v rules.Verdict
	if !internal || g.internalRules {
		// Not the request's context, which ends when the client hangs
		// up: a request is counted whether or not its client waits for
		// the answer (the store bounds its own wait), as in finish.
		v = g.gw.engine.Evaluate(context.Background(), req)
	}
	ctx := r.Context()
	if g.access != nil {
		arrived := g.clock.Now()
		defer func() { g.logAccess(arrived, r, req, sw, v) }()
	}
	defer g.finish(st)
	if v.Rule != nil {
		g.answers.Write(sw, r, g.refusal(v))
		rm.Request(sw.code)
		return
	}
	// The route's total timeout runs from here: it covers the client's
	// body (buffered or streamed) as well as the upstream.
	if rs.total > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rs.total)
		defer cancel()
		r = r.WithContext(ctx)
	}
	if r.Body != nil && r.Body != http.NoBody {
		b := &clientBody{rc: r.Body, max: rs.maxBody, timeout: g.bodyTimeout, dl: findReadDeadliner(w)}
		b.until, _ = ctx.Deadline()
		defer b.disarm()
		r.Body, sw.body = b, b
		if rs.buffer {
			// Read whole before the route's capacity or the upstream is
			// taken: a slow upload holds neither.
			if !g.bufferBody(sw, r, b) {
				rm.Request(sw.code)
				return
			}
			defer r.Body.Close()
		}
	}
	if rs.maxInflight > 0 {
		if !g.gw.engine.Inflight.Acquire(rs.capKey, rs.maxInflight) {
			g.answers.Write(sw, r, respond.Answer{Kind: respond.Unavailable, RetryAfter: rs.retryAfter})
			rm.Request(sw.code)
			return
		}
		defer g.gw.engine.Inflight.Release(rs.capKey)
	}

	if g.sessions != nil {
		if !internal {
			sw.setCookie = g.sessions.maybeIssue(req, &st.buf)
		}
		sw.strip = g.stripSession
		g.sessions.m.StripCookie(r.Header)
	}
	// What a client wrote in forwarding headers is not passed on unless a
	// trusted proxy in front of floodgate vouches for it.
	if !g.resolver.Trusts(peer) {
		delete(r.Header, "X-Forwarded-For")
		delete(r.Header, "Forwarded")
		delete(r.Header, "X-Forwarded-Proto")
	}
	if len(route.Rewrite.Parts) > 0 {
		r.URL.Path, r.URL.RawPath = route.Expand(&st.params), ""
	}
	if g.rlOnOK && v.Closest != nil {
		ra := g.ruleAns[v.Closest.Index]
		sw.setRateLimit(ra.PolicyName(v.ClosestDecision.Limit), v.ClosestDecision, ra.PolicyFieldValues())
	}
	sw.start, sw.clock, sw.timed = g.clock.Now(), g.clock, true
	sw.keepHeader = st.req.ReadsResponseHeader()
	g.forward(st, sw, r, route.Upstream.Handler, rm)
}

// forward hands r to the upstream's handler and counts what it served.
// An answer cut off after its head was sent (the upstream failed
// mid-body, the client stopped reading past write_idle_timeout or left)
// ends the handler with panic(http.ErrAbortHandler): it is counted all
// the same, with the status that was sent, as the access log records it.
// (A method of its own: serve has too many returns for Go to open-code
// its defers, each of which costs a deferred call's record, and this
// one, open-coded here, runs on every forwarded request.)
func (g *Gateway) forward(st *state, sw *statusWriter, r *http.Request, h http.Handler, rm *telemetry.RouteMetrics) {
	cut := true
	defer func() {
		if cut {
			g.forwarded(st, sw, rm)
		}
	}()
	h.ServeHTTP(sw, r)
	cut = false
	if sw.strip != nil {
		stripTrailers(sw.ResponseWriter.Header(), sw.strip)
	}
	g.forwarded(st, sw, rm)
}

// forwarded counts a request the upstream's handler served.
func (g *Gateway) forwarded(st *state, sw *statusWriter, rm *telemetry.RouteMetrics) {
	st.upstream, st.forwarded = g.clock.Since(sw.start), true
	if sw.code != 0 && !sw.own {
		rm.Upstream(sw.headerAfter)
	}
	rm.Request(sw.statusOr200())
}

// admit runs what both deciding listeners do before the rules: the
// path cleaned, the route matched, the query filtered, the client address
// resolved from peer (the connection's address) and who is asking
// identified, into st's rules.Request. A request with no route (404) or a
// query value over its cap (400) is answered here, negotiated on ans, and
// ok is false.
func (g *Gateway) admit(sw *statusWriter, r *http.Request, st *state, peer netip.Addr, internal bool, ln *lane, ans *http.Request) (req *rules.Request, route *proxy.Route, rm *telemetry.RouteMetrics, rs *routeSettings, ok bool) {
	// Rules see, and the upstream gets, one cleaned path: what a rule
	// matched is what is forwarded, whatever dot segments or doubled
	// slashes the client sent.
	p := cleanPath(r.URL.Path)
	if p != r.URL.Path {
		r.URL.Path, r.URL.RawPath = p, ""
	}
	route = g.router.Match(r.Method, p, &st.params)
	if route == nil {
		g.answers.Write(sw, ans, respond.Answer{Kind: respond.NotFound})
		ln.noRoute.Request(sw.code)
		return nil, nil, nil, nil, false
	}
	rm = ln.routes[route.Index]
	rs = &g.routeSet[route.Index]
	sw.route = rs
	if ln == &g.gw && r.ContentLength > rs.maxBody {
		// Refused before anything is read or forwarded, as nginx's
		// client_max_body_size; the body is left unread, so the
		// connection ends after the answer. Only the gateway's own
		// requests carry the client's body: a proxy asking the decision
		// listener sends none, and its Content-Length is not the client's.
		endAfterAnswer(sw)
		g.answers.Write(sw, ans, respond.Answer{Kind: respond.ContentTooLarge})
		rm.Request(sw.code)
		return nil, nil, nil, nil, false
	}
	// The query string is filtered before the rules run, so rules see
	// what would be forwarded; a value over its cap is refused uncounted.
	if route.Query != nil {
		q, bad := route.Query.Filter(r.URL.RawQuery)
		if bad != "" {
			g.answers.Write(sw, ans, respond.Answer{Kind: respond.BadRequest, Rule: rs.overMax[bad]})
			rm.Request(sw.code)
			return nil, nil, nil, nil, false
		}
		r.URL.RawQuery = q
	}

	ip, src := g.resolver.ResolveSource(peer, r.Header)
	if src >= clientip.SourceNoClient {
		g.clientFallback(src, ln)
	}
	req = &st.req
	req.HTTP = r
	req.Path = p
	req.Route, req.RouteGroup = route.Name, route.Group
	req.ClientIP = ip
	req.ClientPrefix = g.resolver.KeyPrefix(ip)
	req.Internal = internal
	g.identify(r, req, rs, true)
	return req, route, rm, rs, true
}

// clientFallback logs a client address found as src says, one line per
// kind and listener per interval: what usually means a proxy or trust
// list misconfigured, every request concerned sharing one key. No line
// names an address.
func (g *Gateway) clientFallback(src clientip.Source, ln *lane) {
	listener := telemetry.ListenerGateway
	if ln != &g.gw {
		listener = telemetry.ListenerDecide
	}
	msg := "the forwarding header names no address outside the trusted proxies: the request is keyed by a proxy's address (the peer's, or the header's leftmost entry)"
	if src == clientip.SourcePrivateRelay {
		msg = "the client address is a private one that forwarded another's request: a proxy in front is likely missing from client_ip.trusted_proxies, and every client behind it shares its key"
	}
	g.failures.Limiter().Log("client address\x1f"+strconv.Itoa(int(src))+"\x1f"+listener, slog.LevelWarn, msg,
		slog.String("header", g.resolver.HeaderName()), slog.String("listener", listener))
}

// refusal is the answer to a request the verdict v refused.
func (g *Gateway) refusal(v rules.Verdict) respond.Answer {
	ra := g.ruleAns[v.Rule.Index]
	switch {
	case v.Rule.Action == rules.Deny:
		return respond.Answer{Kind: respond.Denied, Rule: ra}
	case v.Unavailable:
		return respond.Answer{Kind: respond.Unavailable, Rule: ra, RetryAfter: v.Decision.RetryAfter}
	}
	return respond.Answer{Kind: respond.RateLimited, Rule: ra,
		RetryAfter: v.Decision.RetryAfter, Limit: v.Decision.Limit, Remaining: v.Decision.Remaining}
}

// identify fills in who is asking: the session (verified) and the API
// client (by the route's upstream credentials, else by a listed bearer
// token). count says whether this is a request (its session cookie is
// counted in the metrics) or an explanation.
func (g *Gateway) identify(r *http.Request, req *rules.Request, rs *routeSettings, count bool) {
	if g.sessions != nil {
		g.sessions.verify(r, req, count)
	}
	switch {
	case rs.client.id != "":
		req.APIClient, req.APIClientPlan = rs.client.id, rs.client.plan
	default:
		if c, ok := g.clients.fromBearer(r.Header); ok {
			req.APIClient, req.APIClientPlan = c.id, c.plan
		}
	}
}

// logAccess writes the request's access-log record.
func (g *Gateway) logAccess(arrived time.Time, r *http.Request, req *rules.Request, sw *statusWriter, v rules.Verdict) {
	rec := telemetry.AccessRecord{
		Time: arrived, Method: r.Method, Path: req.Path, Route: req.Route, Status: sw.statusOr200(),
		Duration: g.clock.Since(arrived), UserAgent: r.Header.Get("User-Agent"), Bytes: sw.bytes,
		WouldBlock: req.WouldBlock,
	}
	if req.ClientPrefix.IsValid() {
		rec.Client = g.hasher.Hash(req.ClientPrefix.AppendTo(nil))
	}
	if req.Session != "" {
		// Hashed as the client is, so that floodgate replay can key rules
		// by session without the signing secret or the id.
		rec.Session = g.hasher.Hash([]byte(req.Session))
	}
	rec.APIClient = req.APIClient
	switch {
	case req.NoResponse:
		rec.Listener = telemetry.ListenerDecide
	case req.Internal:
		rec.Listener = "internal"
	}
	if v.Rule != nil {
		rec.BlockedBy = v.Rule.Name
	}
	g.access.Write(rec)
}

// defaultCapacityRetry is the Retry-After of a 503 for lack of capacity
// (a route's cap, an unreachable upstream) when the configuration sets
// none, as for a rule's.
const defaultCapacityRetry = rules.DefaultUnavailableRetry

func (g *Gateway) release(st *state) {
	if st.unread {
		g.boundUnreadBody(&st.w)
		st.unread = false
	}
	st.req.Reset()
	st.w.reset(nil)
	st.upstream, st.forwarded = 0, false
	st.orig, st.nginx = http.Request{}, nginxAnswer{}
	g.pool.Put(st)
}

// upstreamError answers a request the upstream named could not: 502 when
// it is unreachable, 504 (or the route's timeout_status) with Retry-After
// when it timed out, nothing when the client left. Every failure but the
// client's leaving is logged and counted (Failures.Upstream), by kind.
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, err error, upstream string) {
	retry, kind := defaultCapacityRetry, respond.GatewayTimeout
	if sw, ok := w.(*statusWriter); ok {
		sw.own, sw.sent = true, proxy.Sent(err)
		if sw.route != nil {
			retry = sw.route.retryAfter
			if sw.route.timeoutStatus == http.StatusServiceUnavailable {
				kind = respond.Unavailable
			}
		}
	}
	if sw, ok := w.(*statusWriter); ok && sw.body != nil {
		// The client's body failed, not the upstream: its request was
		// cut short, and the exchange is the client's to answer for.
		if f := sw.body.failure(time.Now()); f != bodyOK {
			if kind, ok := f.answer(); ok {
				endAfterAnswer(w)
				g.answers.Write(w, r, respond.Answer{Kind: kind})
			} else {
				w.WriteHeader(499) // the client is gone
			}
			return
		}
	}
	class, totalTimeout := g.upstreamFailed(w, r, err, upstream)
	if class != proxy.Canceled && errors.Is(err, upstreamauth.ErrNoToken) {
		// No credentials for the upstream (token endpoint down): the
		// request was not sent; try again when a token may be had (the
		// rest of the fetch backoff), if the error says.
		if d, ok := upstreamauth.RetryAfter(err); ok {
			retry = d
		}
		g.answers.Write(w, r, respond.Answer{Kind: respond.Unavailable, RetryAfter: retry})
		return
	}
	switch class {
	case proxy.Canceled:
		if totalTimeout {
			g.answers.Write(w, r, respond.Answer{Kind: kind, RetryAfter: retry})
			return
		}
		w.WriteHeader(499) // logged and counted only: the client is gone
	case proxy.Timeout:
		g.answers.Write(w, r, respond.Answer{Kind: kind, RetryAfter: retry})
	default:
		g.answers.Write(w, r, respond.Answer{Kind: respond.BadGateway})
	}
}

// upstreamFailed classifies a failure of the upstream named and, unless
// the client's leaving ended it, counts and logs it as the upstream's
// (telemetry.Failures.Upstream). It also serves an upstream that failed
// after its answer's head went to the client (forward's OnBodyError): the
// answer is cut off then, and nothing more is written. totalTimeout
// reports that the route's total timeout, not the client, ended it.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error, upstream string) (class proxy.Class, totalTimeout bool) {
	route := ""
	if sw, ok := w.(*statusWriter); ok && sw.route != nil {
		route = sw.route.name
	}
	class = proxy.Classify(err)
	totalTimeout = class == proxy.Canceled && r.Context().Err() != nil &&
		errors.Is(context.Cause(r.Context()), context.DeadlineExceeded)
	switch {
	case totalTimeout:
		g.failures.Upstream(route, upstream, proxy.Timeout.String())
	case class != proxy.Canceled:
		g.failures.Upstream(route, upstream, class.String())
	}
	return class, totalTimeout
}

// cleanPath returns the canonical form of an absolute path: dot segments
// resolved, repeated slashes collapsed, a trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	if !needsClean(p) {
		return p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// needsClean reports whether p has "//", "/./" or "/../" (or ends in
// "/." or "/.."), without allocating.
func needsClean(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		rest := p[i+1:]
		switch {
		case strings.HasPrefix(rest, "/"),
			rest == ".", strings.HasPrefix(rest, "./"),
			rest == "..", strings.HasPrefix(rest, "../"):
			return true
		}
	}
	return false
}

// stripTrailers takes the session cookie out of the trailer section: the
// server writes trailers from the header map once the handler returns
// (declared ones by name, others under http.TrailerPrefix), so a
// Set-Cookie there, the upstream's or floodgate's own again, would reach
// the client after the header's strip.
func stripTrailers(h http.Header, strip func(http.Header)) {
	strip(h)
	const k = http.TrailerPrefix + "Set-Cookie"
	if tr, ok := h[k]; ok {
		t := http.Header{"Set-Cookie": tr}
		strip(t)
		if len(t["Set-Cookie"]) == 0 {
			delete(h, k)
		} else {
			h[k] = t["Set-Cookie"]
		}
	}
}

// statusWriter records the status an answer was given with.
type statusWriter struct {
	http.ResponseWriter
	// strip, when set, removes the upstream's Set-Cookie fields for the
	// session cookie, and setCookie is floodgate's own, added after:
	// both when the final header is written, whoever writes it.
	strip     func(http.Header)
	setCookie string
	code      int
	own       bool // floodgate answered (upstream failure)
	// sent: the upstream failed after the request reached it (a
	// timeout, a reset, the client leaving), so it spent time on it.
	sent bool
	// keepHeader: the rules read the response's header after it, so the
	// upstream's fields go through Header() (see WriteHeaderLines).
	keepHeader bool
	bytes      int64
	route      *routeSettings
	body       *clientBody // the request's body, when it has one
	// lingers: the read deadline for what follows the answer is set
	// (endAfterAnswer).
	lingers bool
	// rl: the RateLimit fields of a forwarded response, until written.
	rl rateLimitFields
	// When the request went to the upstream, and how long its response's
	// header took, once timed is set.
	timed       bool
	clock       clock
	start       time.Time
	headerAfter time.Duration
}

// routeName is the name of the request's route, "" before one is known.
func (sw *statusWriter) routeName() string {
	if sw.route == nil {
		return ""
	}
	return sw.route.name
}

// clock is the gateway's time: Options.Now when set (tests inject one),
// else the system clock, whose durations then read the monotonic clock
// alone (time.Since: one clock read where time.Now makes two).
type clock struct{ now func() time.Time }

func (c clock) Now() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

func (c clock) Since(t time.Time) time.Duration {
	if c.now == nil {
		return time.Since(t)
	}
	return c.now().Sub(t)
}

// rateLimitFields are the RateLimit and RateLimit-Policy fields floodgate
// adds to a forwarded response. They live in the request's state until
// the response's header is written, which the forwarder does before it
// returns.
type rateLimitFields struct {
	buf    []byte   // reused from one request to the next
	lines  []byte   // as field lines: "Ratelimit: …\r\nRatelimit-Policy: …\r\n"; nil: none
	value  []byte   // RateLimit's value, within lines
	policy []string // RateLimit-Policy's values
}

// setRateLimit sets the RateLimit fields of the response, for the policy
// named and the decision d. They are written with the response's header:
// as field lines where the server takes them (WriteHeaderLines), else in
// the header map (addRateLimit).
func (w *statusWriter) setRateLimit(name string, d ratelimit.Decision, policy []string) {
	b := append(w.rl.buf[:0], "Ratelimit: "...)
	d.Allowed = true // the fields of an admission: a fixed retry_after has no say
	_, reset := respond.Timing(0, d)
	b = respond.AppendRateLimit(b, name, d.Remaining, reset)
	value := len(b)
	b = append(b, "\r\n"...)
	for _, p := range policy {
		b = append(b, "Ratelimit-Policy: "...)
		b = append(b, p...)
		b = append(b, "\r\n"...)
	}
	w.rl = rateLimitFields{buf: b, lines: b, value: b[len("Ratelimit: "):value], policy: policy}
}

// addRateLimit puts the RateLimit fields in the header map, ahead of any
// the upstream sent, for a header written from the map.
func (w *statusWriter) addRateLimit() {
	rl := &w.rl
	if rl.lines == nil {
		return
	}
	rl.lines = nil
	h := w.ResponseWriter.Header()
	// A slice of its own, not the pooled state's: the server reads the map
	// again after the handler returned (declared trailers).
	h["Ratelimit"] = prepend([]string{string(rl.value)}, h["Ratelimit"])
	h["Ratelimit-Policy"] = prepend(rl.policy, h["Ratelimit-Policy"])
}

// prepend returns ours followed by theirs, ours itself when theirs is
// empty.
func prepend(ours, theirs []string) []string {
	if len(theirs) == 0 {
		return ours
	}
	return append(append(make([]string, 0, len(ours)+len(theirs)), ours...), theirs...)
}

func (w *statusWriter) reset(rw http.ResponseWriter) {
	buf := w.rl.buf[:0]
	if cap(buf) > maxKeptLines {
		buf = nil
	}
	*w = statusWriter{ResponseWriter: rw}
	w.rl.buf = buf
}

// maxKeptLines bounds the buffer a request's state keeps for the next.
const maxKeptLines = 4 << 10

func (w *statusWriter) WriteHeader(code int) {
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		// Informational: the final status follows. The upstream's fields
		// for it pass through the same strip (a 103 cannot set the
		// session cookie either).
		if w.strip != nil {
			w.strip(w.ResponseWriter.Header())
		}
		// floodgate's RateLimit fields stay pending for the final answer:
		// what the forwarder (or ReverseProxy) does to the map around a
		// 1xx cannot take them off it.
		w.ResponseWriter.WriteHeader(code)
		return
	}
	if w.code == 0 {
		w.code = code
		if w.timed {
			w.headerAfter = w.clock.Since(w.start)
		}
	}
	if code == 499 && w.own {
		return // floodgate's mark for "the client went away": nothing to send
	}
	w.addRateLimit()
	if w.strip != nil {
		h := w.ResponseWriter.Header()
		w.strip(h)
		if w.setCookie != "" {
			h["Set-Cookie"] = append(h["Set-Cookie"], w.setCookie)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// WriteHeaderLines passes a forwarded response's field lines on to the
// server (h1server takes them), unless the gateway needs the header as a
// map: to strip the upstream's session cookies, or for the rules that
// read the response's fields after it (count_when, cost: header). It then
// reports false, and the forwarder fills Header() instead.
func (w *statusWriter) WriteHeaderLines(code int, lines []byte, contentLength int64) bool {
	lw, ok := w.ResponseWriter.(interface {
		WriteHeaderLines(code int, lines []byte, contentLength int64) bool
	})
	if !ok || w.strip != nil || w.keepHeader || w.code != 0 || code < 200 {
		return false
	}
	if w.rl.lines != nil {
		// Ahead of the upstream's, as the map would have them (the
		// buffer is the request's own: lines are appended to it).
		w.rl.buf = append(w.rl.lines, lines...)
		lines = w.rl.buf
	}
	if !lw.WriteHeaderLines(code, lines, contentLength) {
		return false
	}
	w.rl.lines = nil
	w.code = code
	if w.timed {
		w.headerAfter = w.clock.Since(w.start)
	}
	return true
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) statusOr200() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Hijack hands the connection over (ReverseProxy's protocol upgrades, through
// http.ResponseController): the RateLimit fields go in the header map
// first, as the 101 is then written from it without WriteHeader.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.addRateLimit()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer
// (flushing streamed responses, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush forwards streaming flushes (httputil.ReverseProxy flushes through
// http.ResponseController, which uses Unwrap; this covers direct callers).
func (w *statusWriter) Flush() {
	if w.code == 0 {
		// A flush commits the header: it goes out as WriteHeader writes
		// it (session cookie strip, RateLimit fields).
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// reuseMode is the forwarder's mode for upstreams.NAME.connection_reuse.
func reuseMode(s string) forward.Reuse {
	switch s {
	case config.ReusePerClient:
		return forward.ReusePerClient
	case config.ReuseNone:
		return forward.ReuseNone
	}
	return forward.ReuseShared
}

// unsolicitedLogEvery bounds the log lines about an upstream's
// unsolicited answers: one a minute at most, with the count since.
const unsolicitedLogEvery = time.Minute

// unsolicited returns what counts an answer upstream name sent that no
// request asked for (floodgate_upstream_unsolicited_total) and logs it,
// at most once a minute: an upstream doing it on every response must not
// flood the log.
func unsolicited(name string, o Options) func() {
	counter := o.Metrics.UpstreamUnsolicited(name)
	var last atomic.Int64 // when it was last logged (UnixNano); 0: never
	var since atomic.Int64
	return func() {
		counter.Inc()
		n := since.Add(1)
		now := time.Now().UnixNano()
		if l := last.Load(); l != 0 && now-l < int64(unsolicitedLogEvery) || !last.CompareAndSwap(l, now) {
			return
		}
		since.Add(-n)
		o.Logger.Warn("upstream sent an answer no request asked for; its connection was closed (see upstreams.NAME.connection_reuse)",
			"upstream", name, "count", n)
	}
}

// overMaxAnswer is the 400 for a value of query parameter name over its
// cap max, or not a whole number: its detail names the parameter and the
// values it takes, in each of the catalog's languages. Nil if the name
// cannot be said (not valid UTF-8), and the catalog's detail is given.
func overMaxAnswer(name string, max int64) *respond.Rule {
	// Braces in a name are literal, not placeholders.
	n := strings.NewReplacer("{", "{{", "}", "}}").Replace(name)
	m := strconv.FormatInt(max, 10)
	msg, err := respond.CompileMessage(map[string]string{
		"en": "The query parameter " + n + " takes a whole number from 0 to " + m + ".",
		"es": "El parámetro de consulta " + n + " admite un número entero de 0 a " + m + ".",
	})
	if err != nil {
		return nil
	}
	r, err := respond.NewRule(respond.RuleSpec{Message: msg})
	if err != nil {
		return nil
	}
	return r
}
