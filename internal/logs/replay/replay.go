// Package replay runs recorded traffic through floodgate's rule engine:
// the same compiled rules (package rules), the same in-memory
// store (ratelimit/memory) and the same route matching as `floodgate
// serve`, with the log's timestamps as the clock. For every rule it counts
// the requests matched, the requests and distinct clients it would have
// refused, the browser clients among them, and the same per hour.
//
// # Time order
//
// The store's clock is the latest timestamp replayed so far, so it never
// goes back. Replay.ReadFiles reads the logs in time order, whatever the
// order of the files and, within bounds, of the lines in a file (see
// ReadOrdered), so the answer is that of the requests in time order, and
// it leaves out records dated far ahead of the records around them (see
// FarAhead) rather than let one move the clock past the others. A
// request that still reaches Add older than the clock (further out of
// order than those bounds, or given to Add directly out of order) is
// replayed at the clock's instant, and counted: Result's Order says how
// many, and by how much at most.
//
// # What is replayed
//
// Each request record becomes the request the rules would have seen: its
// method; its path percent-decoded and cleaned as the gateway cleans it
// (floodgate's access log records the path the rules saw, decoded and
// cleaned, without the query: it is taken as it is); its query; Host
// (ALB and WAF logs record it); the User-Agent header; the listener
// (floodgate's access log: the internal listener's requests meet the
// rules only with InternalRules, the decision listener's not the rules
// that need the response); and the route its path matches among the
// configuration's routes. A request no route matches is counted as
// unrouted and not evaluated, as the gateway answers it 404 before the
// rules; so is a record whose request line was not HTTP (its method or
// target missing), which the gateway's HTTP server answers 400. Other
// headers and cookies are not in access logs: rules that read them see
// them absent.
//
// Sessions and API clients are in floodgate's access log alone: a keyed
// hash of the request's verified session (the gateway's, so no secret is
// needed to replay), and the id of its known API client, whose plan is
// that of Options.Plans. A request that records a session is replayed
// with that hash as its session, present and valid. A request on a route
// whose upstream credentials name an API client (auth.api_client,
// Options.RouteAPIClients) is that client in any log, whatever the log
// records, as the gateway identifies it by the route first. A rule that
// applies only to requests with a session (keyed by session) or of an API
// client (keyed by api_client, or holding a plan's limits) when no
// request replayed has one is not replayed: its Result says so and why
// (Rule.NotReplayed), rather than report that it refused nothing.
//
// The client is the log's: an IP address is grouped by the configured
// prefix lengths (IPv6 /64 by default) like the gateway's "ip" key. A
// client that is not an IP address (a host name, or the hashed client of
// floodgate's access log) keeps its own "ip" counter: it is given a
// distinct stand-in address from the discard-only prefix 100::/64 (RFC
// 6666), used for the key only; client.ip is "" for it in conditions.
//
// Rules with count_when or a cost are charged after each request with the
// log's status, response size and duration (ALB's target processing time,
// floodgate's duration_ms; none in common and combined logs, so
// upstream_seconds costs nothing there). A request the log records as
// refused (floodgate's blocked_by, a WAF's rate-based block) or answered
// by the load balancer itself (ALB: no target status) got an answer that
// was not the upstream's, and is charged nothing, as the gateway charges
// nothing for its own answers. Concurrency caps never refuse in
// a replay: a log does not say which requests overlapped, so each request
// is finished before the next starts.
//
// # Modes
//
// By default (LogOnly) every rule sees all the traffic that matches it:
// block and deny rules report would-blocks instead of answering, and
// evaluation continues, so each rule's numbers are what it alone would
// have done. With LogOnly false, the rules behave as in enforce mode: a
// block rule that refuses a request, or a deny rule, stops evaluation, so
// later rules do not see it. In both modes a refused request uses none of
// the refusing rule's quota (docs/rules.md), so with the fixed_window
// algorithm a rule with limit N/W refuses exactly Σ max(0, count − N) over
// clients and aligned windows W.
package replay

import (
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/proxy"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/uaclass"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// Options configure a Replay.
type Options struct {
	// Rules are the compiled rules to replay; required.
	Rules *rules.Set
	// Routes are the configuration's routes; nil routes every request to
	// one route named "default" (what a configuration with one upstream
	// and no routes has).
	Routes *proxy.Router
	// Resolver groups client addresses into keys (its IPv4 and IPv6
	// prefix lengths); nil groups as the defaults do (/32, /64).
	Resolver *clientip.Resolver
	// LogOnly replays in log-only mode; see the package comment.
	LogOnly bool
	// InternalRules evaluates the rules for requests the gateway took on
	// its internal listener (internal.evaluate_rules); by default they
	// are forwarded uncounted, as the gateway does.
	InternalRules bool
	// Plans give the plan of each known API client by id
	// (api_clients.clients), for the rules with limits_from: plan.
	Plans map[string]string
	// RouteAPIClients give, by route index, the API client a route's
	// requests count as (see RouteAPIClients); it takes precedence over
	// the client a log records, as the gateway's route credentials take
	// precedence over a bearer token.
	RouteAPIClients []string
	// MaxKeys caps the store's counters (memory.Options.MaxKeys); 0 is
	// memory.DefaultMaxKeys.
	MaxKeys int
	// Windows are the window lengths whose per-client peaks the result
	// shows; nil takes those of the rules' limits.
	Windows []time.Duration
}

// A Replay runs records through the rules. Make one with New, Add every
// record, then call Result. It is not safe for concurrent use.
type Replay struct {
	engine   rules.Engine
	store    *memory.Store
	now      int64 // the clock: latest timestamp seen, Unix nanoseconds
	routes   *proxy.Router
	resolver *clientip.Resolver
	base     *baseline.Baseline
	rules    []*rules.Rule
	stats    []ruleStats
	index    map[*rules.Rule]int
	clients  []clientKey // by ClientID
	unrouted int64
	plans    map[string]string // Options.Plans
	routeIDs []string          // Options.RouteAPIClients
	sessions int64             // requests that recorded a session
	apiCalls int64             // requests replayed as an API client
	internal bool              // Options.InternalRules
	timed    int64             // requests whose record gives the upstream's duration
	late     int64             // requests older than the clock when replayed
	lateMax  int64             // the most one was older, nanoseconds
	lateWhy  LateReasons       // the late read by ReadFiles, by why
	leftOut  LeftOut

	// The request being replayed, reused.
	req     rules.Request
	httpReq http.Request
	url     url.URL
	header  http.Header
	uaVal   [1]string
	params  proxy.Params
	cur     struct {
		client baseline.ClientID
		hour   int64
	}
	strs map[string]string // interned methods, hosts and User-Agents
}

type clientKey struct {
	addr   netip.Addr // invalid for clients that are not addresses
	prefix netip.Prefix
}

// The replay's store is seeded and has a fixed number of shards, so that
// which counters it evicts when full is decided by the records alone: the
// same logs and rules give the same report in every run, on every machine
// (memory.Options.Seed).
const (
	storeShards = 16
	storeSeed   = 0x666c6f6f64676174 // "floodgat"
)

// New returns a Replay of the rules in o.
func New(o Options) *Replay {
	r := &Replay{routes: o.Routes, resolver: o.Resolver, internal: o.InternalRules, plans: o.Plans, routeIDs: o.RouteAPIClients, index: map[*rules.Rule]int{},
		header: http.Header{}, strs: map[string]string{}}
	if r.resolver == nil {
		r.resolver = &clientip.Resolver{}
	}
	r.store = memory.New(memory.Options{Now: func() time.Time { return time.Unix(0, r.now) }, MaxKeys: o.MaxKeys,
		Shards: storeShards, Seed: storeSeed})
	logOnly := &atomic.Bool{}
	logOnly.Store(o.LogOnly)
	r.engine = rules.Engine{Set: o.Rules, Store: r.store, LogOnly: logOnly, Inflight: &rules.Inflight{}, Obs: observer{r}}
	windows := o.Windows
	seen := map[time.Duration]bool{}
	for i, rule := range o.Rules.Rules {
		r.index[rule] = i
		r.rules = append(r.rules, rule)
		st := ruleStats{hours: map[int64]*hourStats{}, clients: map[baseline.ClientID]struct{}{}}
		for range rule.Candidates {
			st.candidates = append(st.candidates, candidateStats{clients: map[baseline.ClientID]struct{}{}})
		}
		r.stats = append(r.stats, st)
		if o.Windows == nil {
			for _, l := range rule.Limits {
				if !seen[l.Window] {
					seen[l.Window] = true
					windows = append(windows, l.Window)
				}
			}
		}
	}
	r.base = baseline.New(windows)
	r.httpReq.URL = &r.url
	r.httpReq.Header = r.header
	r.httpReq.Proto, r.httpReq.ProtoMajor, r.httpReq.ProtoMinor = "HTTP/1.1", 1, 1
	return r
}

// ReadFiles replays the named logs ("-" is o.Stdin) in time order, as
// ReadOrdered reads them, and returns what was read from each. Its error
// is about opening or reading a file; the records read before it are
// replayed.
func (r *Replay) ReadFiles(ctx context.Context, names []string, o logs.ReadOptions) ([]logs.File, error) {
	files, left, err := ReadOrdered(names, o, func(rec *logs.Record, why Lateness) { r.add(ctx, rec, why) })
	r.leftOut.Records += left.Records
	r.leftOut.MaxAhead = max(r.leftOut.MaxAhead, left.MaxAhead)
	return files, err
}

// Add replays one record. Decision-log records are skipped (they are not
// requests); see baseline.Baseline.Decisions. A request older than the
// clock (the latest request replayed) is replayed at the clock's instant
// and counted late; see the package comment.
func (r *Replay) Add(ctx context.Context, rec *logs.Record) {
	r.add(ctx, rec, OnTime)
}

// add is Add of a record that ReadOrdered says is late for why, if it is
// older than the clock: the clock is that of the requests alone, so a
// record ReadOrdered hands on late may be on time here, never the other
// way round.
func (r *Replay) add(ctx context.Context, rec *logs.Record, why Lateness) {
	id, ok := r.base.Add(rec)
	if !ok {
		return
	}
	if rec.Time < r.now {
		r.late++
		r.lateMax = max(r.lateMax, r.now-rec.Time)
		r.lateWhy.add(why)
	}
	r.now = max(r.now, rec.Time)
	if rec.Duration > 0 && !rec.ForProxy {
		r.timed++
	}
	if len(rec.Session) > 0 {
		r.sessions++
	}
	r.cur.client = id
	r.cur.hour = floorDiv(rec.Time, int64(time.Hour))
	if len(rec.Method) == 0 || len(rec.Target) == 0 {
		// Not an HTTP request line (TLS on a plain port, "-"): the
		// gateway's HTTP server answers it 400 before any route or rule.
		r.unrouted++
		return
	}
	method := r.intern(rec.Method)
	target := rec.Target
	rawPath, rawQuery := target, []byte(nil)
	if q := indexByte(target, '?'); q >= 0 && !rec.PathDecoded {
		rawPath, rawQuery = target[:q], target[q+1:]
	}
	p := string(rawPath)
	if strings.IndexByte(p, '%') >= 0 && !rec.PathDecoded {
		if d, err := url.PathUnescape(p); err == nil {
			p = d
		}
	}
	p = CleanPath(p)

	var route *proxy.Route
	if r.routes != nil {
		if route = r.routes.Match(method, p, &r.params); route == nil {
			r.unrouted++
			return
		}
	}
	if rec.Internal && !r.internal {
		// The internal listener forwards uncounted.
		return
	}

	r.url = url.URL{Path: p}
	if len(rawQuery) > 0 {
		r.url.RawQuery = string(rawQuery)
	}
	r.httpReq.Method = method
	r.httpReq.Host = ""
	if len(rec.Host) > 0 {
		r.httpReq.Host = r.intern(rec.Host)
	}
	delete(r.header, "User-Agent")
	if len(rec.UserAgent) > 0 {
		r.uaVal[0] = r.intern(rec.UserAgent)
		r.header["User-Agent"] = r.uaVal[:]
	}

	req := &r.req
	req.Reset()
	req.HTTP = &r.httpReq
	req.Path = p
	req.Route = "default"
	if route != nil {
		req.Route, req.RouteGroup = route.Name, route.Group
	}
	ck := r.clientKey(id)
	req.ClientIP, req.ClientPrefix = ck.addr, ck.prefix
	req.Internal, req.NoResponse = rec.Internal, rec.ForProxy
	if len(rec.Session) > 0 {
		// The gateway's hash of the session stands for its id: one
		// session, one hash (given one FLOODGATE_LOG_HASH_KEY).
		req.Session, req.SessionPresent, req.SessionValid = string(rec.Session), true, true
	}
	switch {
	case route != nil && route.Index < len(r.routeIDs) && r.routeIDs[route.Index] != "":
		// The route's upstream credentials name the client, whatever
		// the log says, as the gateway identifies it.
		req.APIClient = r.routeIDs[route.Index]
	case len(rec.APIClient) > 0:
		req.APIClient = r.intern(rec.APIClient)
	}
	if req.APIClient != "" {
		req.APIClientPlan = r.plans[req.APIClient]
		r.apiCalls++
	}
	v := r.engine.Evaluate(ctx, req)
	// The response, for count_when and cost rules: the log's, unless the
	// replayed rules refused the request (enforce mode) or the log says it
	// was refused or answered by the load balancer: then the status is not
	// the upstream's.
	forwarded := v.Rule == nil && len(rec.BlockedBy) == 0 && !rec.NoUpstreamAnswer && !rec.ForProxy
	resp := rules.Response{Status: rec.Status, Bytes: max(rec.Bytes, 0), Upstream: rec.Duration, Forwarded: forwarded}
	if v.Rule != nil {
		resp = rules.Response{Status: http.StatusTooManyRequests}
		if v.Rule.Action == rules.Deny {
			resp.Status = http.StatusForbidden
		}
	}
	r.engine.Finish(ctx, req, resp)
}

// maxInterned bounds the interned strings.
const maxInterned = 1 << 16

func (r *Replay) intern(b []byte) string {
	if s, ok := r.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.strs) < maxInterned {
		r.strs[s] = s
	}
	return s
}

// discardPrefix is 100::/64 (RFC 6666), where clients that are not
// addresses get their stand-in addresses.
var discardPrefix = [16]byte{0x01}

func (r *Replay) clientKey(id baseline.ClientID) clientKey {
	for int(id) >= len(r.clients) {
		cid := baseline.ClientID(len(r.clients))
		name, _ := r.base.ClientName(cid)
		var ck clientKey
		if a, err := netip.ParseAddr(name); err == nil {
			a = a.Unmap().WithZone("")
			ck = clientKey{addr: a, prefix: r.resolver.KeyPrefix(a)}
		} else {
			b := discardPrefix
			b[12], b[13], b[14], b[15] = byte(cid>>24), byte(cid>>16), byte(cid>>8), byte(cid)
			ck = clientKey{prefix: netip.PrefixFrom(netip.AddrFrom16(b), 128)}
		}
		r.clients = append(r.clients, ck)
	}
	return r.clients[id]
}

// Unrouted returns the number of requests no route matched, or whose
// request line was not HTTP.
func (r *Replay) Unrouted() int64 { return r.unrouted }

// StoreStats returns the replay store's counts: evictions mean MaxKeys
// was too small for the traffic, and some counters restarted empty.
func (r *Replay) StoreStats() memory.Stats { return r.store.Stats() }

// Baseline returns the per-client peaks measured along the replay.
func (r *Replay) Baseline() *baseline.Baseline { return r.base }

type ruleStats struct {
	matched, wouldBlock, errors int64
	charged                     float64
	clients                     map[baseline.ClientID]struct{}
	hours                       map[int64]*hourStats
	lastHour                    int64
	last                        *hourStats
	candidates                  []candidateStats
}

type candidateStats struct {
	wouldBlock int64
	clients    map[baseline.ClientID]struct{}
}

type hourStats struct {
	matched, wouldBlock int64
	clients             map[baseline.ClientID]struct{}
}

// observer counts the engine's decisions for the Replay.
type observer struct{ r *Replay }

var _ rules.Observer = observer{}

// Observe counts one rule decision (rules.Observer).
func (o observer) Observe(_ *rules.Request, rule *rules.Rule, out rules.Outcome, _ []byte, _ ratelimit.Decision, err error) {
	r := o.r
	i, ok := r.index[rule]
	if !ok {
		return
	}
	st := &r.stats[i]
	if err != nil {
		st.errors++
		return
	}
	h := st.last
	if h == nil || st.lastHour != r.cur.hour {
		h = st.hours[r.cur.hour]
		if h == nil {
			h = &hourStats{}
			st.hours[r.cur.hour] = h
		}
		st.last, st.lastHour = h, r.cur.hour
	}
	st.matched++
	h.matched++
	if out == rules.Allowed {
		return
	}
	st.wouldBlock++
	h.wouldBlock++
	st.clients[r.cur.client] = struct{}{}
	if h.clients == nil {
		h.clients = map[baseline.ClientID]struct{}{}
	}
	h.clients[r.cur.client] = struct{}{}
}

// ObserveCandidate counts one candidate limit's decision.
func (o observer) ObserveCandidate(rule *rules.Rule, i int, out rules.Outcome) {
	r := o.r
	ri, ok := r.index[rule]
	if !ok || i >= len(r.stats[ri].candidates) || out == rules.Allowed {
		return
	}
	c := &r.stats[ri].candidates[i]
	c.wouldBlock++
	c.clients[r.cur.client] = struct{}{}
}

// Charged adds up a rule's charged cost.
func (o observer) Charged(rule *rules.Rule, cost float64) {
	if ri, ok := o.r.index[rule]; ok {
		o.r.stats[ri].charged += cost
	}
}

// CleanPath returns the canonical form of a request path as the gateway
// computes it before matching routes and rules: absolute, dot segments
// resolved, repeated slashes collapsed, a trailing slash kept.
func CleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// isBrowser reports whether a client is a browser client.
func (r *Replay) isBrowser(id baseline.ClientID) bool {
	return r.base.Class(id) == uaclass.Browser
}
