// Package admin serves floodgate's admin listener: metrics, health and
// readiness, and the operator's API (effective configuration, run-time
// mode, explain). It listens on loopback by default (admin.listen).
//
// Access: /metrics, /healthz and /readyz are open (scrapers and load
// balancers call them). Every /admin/ endpoint reveals or changes
// something and needs `Authorization: Bearer TOKEN` with the configured
// admin.token, or a browser signed in with that token at /admin/
// (signin.go); when no token is configured, they answer only to loopback
// peers that address the listener by a loopback name, and take no change
// from another site's page.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// Options configures Handler.
type Options struct {
	// Gatherer is the registry /metrics exposes.
	Gatherer prometheus.Gatherer
	// Server is the live gateway; nil serves only /metrics, /healthz and
	// /readyz. With it, /readyz checks floodgate's own upstream tokens
	// (gateway.Server.CheckTokens).
	Server *gateway.Server
	// Ready reports whether the gateway can serve traffic now (not
	// shutting down); nil means always.
	Ready func(context.Context) error
	// Store reports whether a store that can fail (Redis) answers; nil
	// means it cannot fail. /readyz and the dashboard show its error, but
	// it never makes the gateway unready: every replica shares the store,
	// so a readiness probe failing on it would take them all out of the
	// load balancer at once, where the store's failure policy (fail open
	// or closed) decides what becomes of each request.
	Store func(context.Context) error
	// Logger receives the admin API's record of what was done and refused (actionlog.go); nil: none.
	Logger *slog.Logger
	// Refusals sets how refused requests are rate-limited in the log
	// (interval, clock); zero: telemetry's defaults.
	Refusals telemetry.LogLimiterOptions
	// Now is the clock of the dashboard's rates and of browser sign-ins'
	// expiry; nil means time.Now.
	Now func() time.Time
}

// Handler returns the admin listener's handler:
//
//	GET  /metrics        Prometheus text exposition (docs/metrics.md)
//	GET  /healthz        200 "ok" while the process serves
//	GET  /readyz         200 when ready for traffic (even with the store down), 503 otherwise
//	                     (shutting down, the store or floodgate's own upstream tokens not had since start)
//	GET  /admin/         the dashboard (dashboard.go)
//	GET  /admin/config   the effective configuration as JSON, secrets redacted
//	GET  /admin/mode     {"mode": "enforce" | "log-only"}
//	PUT  /admin/mode     switch the mode: body "enforce" or "log-only" (or that JSON)
//	POST /admin/explain  what the gateway would do with a request, against live counters
//	POST /admin/signin   the sign-in form's target: token → cookie (signin.go)
//	POST /admin/signout  the dashboard's sign-out button
//
// Every request to an /admin/ endpoint is logged to o.Logger, admitted or
// refused (actionlog.go).
// ReadyTimeout bounds a /readyz answer: what the store's checks have not
// said by then counts as not answering. A readiness probe waits longer.
const ReadyTimeout = 2 * time.Second

func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		text(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if o.Ready != nil {
			if err := o.Ready(ctx); err != nil {
				text(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		// The store is checked while the tokens are: a token endpoint
		// that does not answer holds its check to the end of ctx, which
		// must not read as a store not answering.
		var storeErr chan error
		if o.Store != nil {
			storeErr = make(chan error, 1)
			go func() { storeErr <- o.Store(ctx) }()
		}
		var notes []string
		if o.Server != nil {
			// The error names no secret, token or address: it may be
			// shown here.
			if ready, err := o.Server.CheckTokens(ctx); err != nil {
				msg := strings.ReplaceAll(err.Error(), "\n", "; ")
				if !ready {
					text(w, http.StatusServiceUnavailable, "not ready: "+msg)
					return
				}
				notes = append(notes, msg)
			}
		}
		if storeErr != nil {
			if err := <-storeErr; err != nil {
				// The error names the store's nodes: for the dashboard,
				// behind the token, not for an open endpoint.
				notes = append(notes, "store: not answering (the dashboard says why)")
			}
		}
		if len(notes) > 0 {
			text(w, http.StatusOK, "ready; "+strings.Join(notes, "; "))
			return
		}
		text(w, http.StatusOK, "ready")
	})
	if o.Server == nil {
		return mux
	}
	dash := newDashboard(o) // dashboard.go
	a := &api{s: o.Server, in: dash.signIn}
	al := newActionLog(o.Logger, o.Refusals) // actionlog.go: every request below is logged
	mux.HandleFunc("GET /admin/config", al.wrap("read config", a.auth(a.config)))
	mux.HandleFunc("GET /admin/mode", al.wrap("read mode", a.auth(a.getMode)))
	mux.HandleFunc("PUT /admin/mode", al.wrap("set mode", a.auth(a.putMode)))
	mux.HandleFunc("POST /admin/explain", al.wrap("explain", a.auth(a.explain)))
	mux.HandleFunc("GET /admin/{$}", al.wrap("dashboard", a.auth(dash.ServeHTTP)))
	mux.HandleFunc("POST /admin/signin", al.wrap("sign in", a.signInHandler)) // signin.go
	mux.HandleFunc("POST /admin/signout", al.wrap("sign out", a.signOut))
	mux.Handle("GET /admin", http.RedirectHandler("/admin/", http.StatusMovedPermanently))
	return unmatched(mux, al)
}

// unmatched serves mux, and logs as refusals the requests under /admin/
// that no endpoint takes (a method it does not answer: 405; a path it
// does not have: 404), with Cache-Control no-store as on every admin
// answer: a probe of the admin API is on the record like a wrong token.
func unmatched(mux *http.ServeMux, al *actionLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/admin/") {
			mux.ServeHTTP(w, r)
			return
		}
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		aw := &actionWriter{ResponseWriter: w}
		mux.ServeHTTP(aw, r)
		switch aw.status {
		case http.StatusNotFound:
			aw.reason = reasonNoEndpoint
		case http.StatusMethodNotAllowed:
			aw.reason = reasonMethod
		default: // a redirect to the cleaned path
			return
		}
		al.record(r, "none", aw)
	})
}

type api struct {
	s  *gateway.Server
	in *signIn
}

// auth admits a request with the configured bearer token, or a browser
// signed in with it (signin.go), or from a loopback peer when no token is
// configured.
func (a *api) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := a.s.Current().Config().Config.Admin.Token
		if token == "" {
			if !loopback(r.RemoteAddr) {
				problem(w, http.StatusForbidden, "admin.token is not set: the admin API answers only to loopback peers")
				return
			}
			// A loopback peer may still be a browser running another
			// site's page: one whose name was rebound to 127.0.0.1 (DNS
			// rebinding) sends its own name as Host, and one that stayed
			// on its own origin sends a cross-site Origin. Without a token
			// nothing else tells them from the operator.
			if !loopbackHost(r.Host) {
				noteRefusal(w, reasonHost)
				problem(w, http.StatusForbidden, "admin.token is not set: the admin API answers only to requests addressed to 127.0.0.1, [::1] or localhost")
				return
			}
			if r.Method != http.MethodGet && r.Method != http.MethodHead && crossSite(r) {
				noteRefusal(w, reasonCrossOrigin)
				problem(w, http.StatusForbidden, "the admin API changes things only from the dashboard's page or a client that is not a browser")
				return
			}
			h(w, r)
			return
		}
		if r.Header.Get("Authorization") == "" {
			if in, ok := a.in.current(r, token); ok {
				if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r, in, "") {
					noteRefusal(w, reasonCrossOrigin)
					problem(w, http.StatusForbidden, "a signed-in browser changes things only from the dashboard's page ("+csrfHeader+")")
					return
				}
				h(w, r.WithContext(context.WithValue(r.Context(), signedInKey{}, in)))
				return
			}
			if r.Method == http.MethodGet && r.URL.Path == "/admin/" {
				a.in.form(w, http.StatusUnauthorized, signInPage{})
				return
			}
		}
		if sent := r.Header["Authorization"]; !bearerMatches(sent, token) {
			if len(sent) == 0 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="floodgate admin"`)
				problem(w, http.StatusUnauthorized, "an Authorization: Bearer header with the admin token is required")
				return
			}
			// RFC 6750 section 3.1: a token was sent, and it is not the one.
			w.Header().Set("WWW-Authenticate", `Bearer realm="floodgate admin", error="invalid_token"`)
			problem(w, http.StatusUnauthorized, "the Authorization header does not carry the admin token (a Bearer token, as admin.token sets it)")
			return
		}
		h(w, r)
	}
}

func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// loopbackHost reports whether host, a request's Host (with or without a
// port), names this machine's loopback: localhost, or a loopback address.
// An empty Host (HTTP/1.0) is no browser's, and passes.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if port == "" || strings.Trim(port, "0123456789") != "" {
			return false
		}
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	bracketed := strings.HasPrefix(host, "[") // an IPv6 address, and only that
	if !bracketed && strings.EqualFold(strings.TrimSuffix(name, "."), "localhost") {
		return true
	}
	a, err := netip.ParseAddr(name)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback() && a.Is6() == bracketed
}

// crossSite reports whether r comes from another site's page, as the
// browser says in Sec-Fetch-Site or Origin.
func crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	o := r.Header.Get("Origin")
	return o != "" && o != origin(r)
}

func (a *api) config(w http.ResponseWriter, r *http.Request) {
	f := a.s.Current().Config()
	body := map[string]any{
		"file":        f.Name,
		"environment": f.Env,
		"hash":        a.s.Hash(),
		"mode":        modeName(a.s.LogOnly()),
		"config":      config.Redacted(f.Config),
	}
	// The file on disk is not the configuration in force: say why.
	if rej := a.s.LastRejection(); rej != nil {
		body["rejected"] = rej
	}
	writeJSON(w, http.StatusOK, body)
}

func modeName(logOnly bool) string {
	if logOnly {
		return config.ModeLogOnly
	}
	return config.ModeEnforce
}

func (a *api) getMode(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"mode": modeName(a.s.LogOnly())})
}

func (a *api) putMode(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1024))
	if err != nil {
		problem(w, http.StatusBadRequest, "cannot read the body")
		return
	}
	mode := strings.TrimSpace(string(body))
	var js struct {
		Mode string `json:"mode"`
	}
	if strings.HasPrefix(mode, "{") {
		if err := json.Unmarshal(body, &js); err != nil {
			problem(w, http.StatusBadRequest, "body is not JSON like {\"mode\": \"enforce\"}")
			return
		}
		mode = js.Mode
	}
	switch mode {
	case config.ModeEnforce, config.ModeLogOnly:
	default:
		problem(w, http.StatusBadRequest, fmt.Sprintf("mode %q is not enforce or log-only", mode))
		return
	}
	from := modeName(a.s.LogOnly())
	a.s.SetMode(mode == config.ModeLogOnly)
	noteAction(w, slog.String("from", from), slog.String("to", mode))
	writeJSON(w, http.StatusOK, map[string]string{"mode": mode})
}

// ExplainRequest is the body of POST /admin/explain.
type ExplainRequest struct {
	Method  string         `json:"method"`
	Path    string         `json:"path"` // may carry a query string
	Headers ExplainHeaders `json:"headers"`
	// IP is the address the request comes from (the peer). Default
	// 192.0.2.1.
	IP string `json:"ip"`
}

func (a *api) explain(w http.ResponseWriter, r *http.Request) {
	var er ExplainRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&er); err != nil {
		problem(w, http.StatusBadRequest, "body must be JSON: {\"method\", \"path\", \"headers\", \"ip\"}: "+err.Error())
		return
	}
	req, err := er.Build()
	if err != nil {
		problem(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, a.s.Current().Explain(r.Context(), req))
}

// ExplainHeaders are the request's header fields by name: in JSON a
// string, or a list of strings for a field the request repeats
// ({"Accept": "*/*", "X-Api-Key": ["a", "b"]}), which the rules see
// joined with ", " as they do a real request's.
type ExplainHeaders map[string][]string

// UnmarshalJSON accepts a string or a list of strings for each name.
func (h *ExplainHeaders) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(ExplainHeaders, len(raw))
	for name, v := range raw {
		values := []json.RawMessage{v}
		if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
			values = nil
			if err := json.Unmarshal(v, &values); err != nil {
				return fmt.Errorf("headers[%q]: %w", name, err)
			}
		}
		for _, rv := range values {
			// null would decode as "": a field the body does not give.
			var s string
			if bytes.Equal(bytes.TrimSpace(rv), []byte("null")) || json.Unmarshal(rv, &s) != nil {
				return fmt.Errorf("headers[%q]: want a string or a list of strings", name)
			}
			out[name] = append(out[name], s)
		}
		if out[name] == nil {
			out[name] = []string{}
		}
	}
	*h = out
	return nil
}

// explainHost is an explained request's Host when the body gives none.
const explainHost = "floodgate.invalid"

// Build turns the description into the request the gateway would see.
func (er ExplainRequest) Build() (*http.Request, error) {
	if er.Method == "" {
		er.Method = http.MethodGet
	}
	if !strings.HasPrefix(er.Path, "/") {
		return nil, errors.New("path must start with /")
	}
	req, err := http.NewRequest(strings.ToUpper(er.Method), "http://"+explainHost+er.Path, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	// Names in order, so that two spellings of one name ("x-a", "X-A")
	// add their values the same way each time.
	for _, k := range slices.Sorted(maps.Keys(er.Headers)) {
		vs := er.Headers[k]
		if strings.EqualFold(k, "Host") {
			if len(vs) != 1 || req.Host != explainHost { // one Host, one spelling
				return nil, errors.New("a request has one Host")
			}
			req.Host = vs[0]
			continue
		}
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	ip := er.IP
	if ip == "" {
		ip = "192.0.2.1"
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil, fmt.Errorf("ip %q is not an IP address", ip)
	}
	req.RemoteAddr = netip.AddrPortFrom(addr, 40000).String()
	return req, nil
}

func text(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, s+"\n")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func problem(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type": "about:blank", "title": http.StatusText(code), "status": code, "detail": detail,
	})
}
