package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// decider is the decision listener's share of a Gateway: the protocol its
// proxy speaks, and the gateway's engine observed under the listener label
// "decide". Routes, rules, store, keys, answers and the mode switch are
// the Gateway's own, so both listeners decide alike on the same counters.
type decider struct {
	protocol string
	lane     lane
}

// lane is what differs between the listeners that decide: the engine's
// observer (metrics labelled by listener) and the route metrics.
type lane struct {
	engine  rules.Engine
	routes  []*telemetry.RouteMetrics // by route index
	noRoute *telemetry.RouteMetrics
}

// newDecider returns the decision listener's part of g, or nil when the
// configuration has none. g's engine and routes must be built.
func newDecider(g *Gateway, c *config.Config, o Options) *decider {
	if !c.DecideEnabled() {
		return nil
	}
	d := &decider{protocol: c.Decide.Protocol}
	d.lane.engine = g.gw.engine
	d.lane.engine.Obs = telemetry.NewDecisions(o.Metrics.ForRules(g.gw.engine.Set, telemetry.ListenerDecide), o.Logger, c.Log.Decisions, g.hasher, o.Failures)
	for _, rc := range c.Routes {
		d.lane.routes = append(d.lane.routes, o.Metrics.ForRoute(rc.Name, telemetry.ListenerDecide))
	}
	d.lane.noRoute = o.Metrics.ForRoute("", telemetry.ListenerDecide)
	return d
}

// ServeDecide answers a proxy that asks whether a request may pass
// (docs/decide.md). The request is rebuilt from the proxy's headers, by
// decide.protocol, and decided as the gateway decides: the same route
// match, client address, identities and rules, minus the rules that need
// the response (rules.NeedsResponse), which are skipped. Nothing is
// forwarded. Allowed: 200, empty, with the RateLimit fields. Refused:
// floodgate's answer (429, 403, 503 …), or with protocol nginx, which
// passes on nothing but 2xx, 401 and 403, 403 with X-Floodgate-Status
// naming it. A peer outside client_ip.trusted_proxies gets 403, a request
// without what its protocol needs 400, both with X-Floodgate-Decide-Error
// saying why, and neither is decided.
func (g *Gateway) ServeDecide(w http.ResponseWriter, r *http.Request) {
	d := g.decide
	if d == nil || !isDecidePath(r.URL.Path, d) {
		g.answers.Write(w, r, respond.Answer{Kind: respond.NotFound})
		return
	}
	g.metrics.Inflight().Inc()
	defer g.metrics.Inflight().Dec()

	peer := clientip.Peer(r.RemoteAddr)
	if !g.resolver.Trusts(peer) {
		// The peer's address, hashed: which proxy it was is for the
		// operator to find, not for the log to hold. One line per
		// interval: a misconfigured proxy asks with every request.
		g.failures.Limiter().Log("decision refused\x1fpeer", slog.LevelWarn, "decision refused: the asking peer is not in client_ip.trusted_proxies",
			slog.String("peer_hash", g.hasher.Hash(peer.AppendTo(nil))))
		d.refuse(g, w, r, "the asking peer is not in client_ip.trusted_proxies", respond.Denied)
		return
	}
	orig, err := readOriginal(d.protocol, r)
	if err == nil && len(r.Header[g.resolver.HeaderName()]) == 0 {
		err = originalError(g.resolver.HeaderName() + " is missing: the proxy must send the client's address")
	}
	if err != nil {
		g.failures.Limiter().Log("decision refused\x1foriginal\x1f"+err.Error(), slog.LevelWarn, "decision refused: the proxy's request does not describe the original",
			slog.String("protocol", d.protocol), slog.String("error", err.Error()))
		d.refuse(g, w, r, err.Error(), respond.BadRequest)
		return
	}

	st := g.pool.Get().(*state)
	defer g.release(st)
	if d.protocol == config.DecideNginx {
		st.nginx.ResponseWriter = w
		st.w.reset(&st.nginx)
	} else {
		st.w.reset(w)
	}
	sw := &st.w

	// The original request, as the rules see it: the asking request's
	// header fields (the client's, passed on by the proxy) with the
	// original method, target and host.
	or := &st.orig
	*or = *r
	or.Method, or.URL, or.RequestURI = orig.method, orig.url, orig.url.RequestURI()
	if orig.host != "" {
		or.Host = orig.host
	}
	req, _, rm, _, ok := g.admit(sw, or, st, peer, false, &d.lane, r)
	if !ok {
		return
	}
	req.Scheme, req.NoResponse = orig.scheme, true
	// Counted whether or not the proxy waits for the answer, as a
	// forwarded request is (Gateway.ServeHTTP).
	v := d.lane.engine.Evaluate(context.Background(), req)
	if g.access != nil {
		arrived := g.clock.Now()
		defer func() { g.logAccess(arrived, or, req, sw, v) }()
	}
	if v.Rule != nil {
		// Negotiated on the asking request: its header is the client's,
		// and its method is the one this answer goes back on.
		g.answers.Write(sw, r, g.refusal(v))
		rm.Request(sw.code)
		return
	}
	if g.rlOnOK && v.Closest != nil {
		ra := g.ruleAns[v.Closest.Index]
		sw.setRateLimit(ra.PolicyName(v.ClosestDecision.Limit), v.ClosestDecision, ra.PolicyFieldValues())
	}
	sw.WriteHeader(http.StatusOK)
	rm.Request(http.StatusOK)
}

// refuse answers a proxy's request that is not decided, with why in
// X-Floodgate-Decide-Error, and counts it under no route.
func (d *decider) refuse(g *Gateway, w http.ResponseWriter, r *http.Request, why string, k respond.Kind) {
	w.Header().Set("X-Floodgate-Decide-Error", why)
	g.answers.Write(w, r, respond.Answer{Kind: k})
	d.lane.noRoute.Request(k.Status())
}

// isDecidePath reports whether p is the decision listener's path for d's
// protocol: /decide, or with envoy /decide followed by the original path.
func isDecidePath(p string, d *decider) bool {
	if d.protocol == config.DecideEnvoy {
		return len(p) > len(decidePath) && p[:len(decidePath)] == decidePath && p[len(decidePath)] == '/'
	}
	return p == decidePath
}

// nginxAnswer passes floodgate's refusals to nginx's auth_request, which
// treats every status but 2xx, 401 and 403 as an error of the server it
// asked: as 403, with the status meant for the client in
// X-Floodgate-Status (docs/decide.md turns it back into that status).
type nginxAnswer struct{ http.ResponseWriter }

func (w *nginxAnswer) WriteHeader(code int) {
	if code >= 300 {
		w.Header()["X-Floodgate-Status"] = []string{strconv.Itoa(code)}
		code = http.StatusForbidden
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *nginxAnswer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Decide returns the decision listener's handler: the live Gateway's
// ServeDecide, and its refusals counted under the listener "decide".
func (s *Server) Decide() http.Handler { return decideHandler{s} }

type decideHandler struct{ s *Server }

func (h decideHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.s.cur.Load().ServeDecide(w, r)
}

// Refused counts an answer the decision listener's server gave a proxy's
// request itself, under no route, as the requests refused undecided.
func (h decideHandler) Refused(code int) {
	if d := h.s.cur.Load().decide; d != nil {
		d.lane.noRoute.Request(code)
	}
}
