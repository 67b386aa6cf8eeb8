package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/forward"
)

// Route is one compiled route.
type Route struct {
	Index   int
	Name    string
	Group   string
	Pattern config.Pattern
	// Methods, when non-empty, restricts the route to these methods.
	Methods []string
	// Rewrite is the upstream path template; no parts forwards the path as is.
	Rewrite config.Template
	// Constraints must hold for the named parameters, or the route does
	// not match (the next route may).
	Constraints map[string]func(string) bool
	// Values, for the named parameters it has, lists the allowed values,
	// each with what Expand writes in its place; another value does not
	// match.
	Values map[string]map[string]string
	// Query, when not nil, filters the forwarded query string.
	Query    *QueryFilter
	Upstream *Upstream
}

// Router finds the first route that matches a request.
type Router struct {
	Routes []*Route
}

// Match returns the first route matching method and the cleaned path,
// filling p with its parameters, or nil.
func (rt *Router) Match(method, path string, p *Params) *Route {
	slashes := -1 // counted once, for the first pattern that asks
	for _, r := range rt.Routes {
		if len(r.Methods) > 0 && !contains(r.Methods, method) {
			continue
		}
		if want := r.Pattern.Slashes(); want >= 0 {
			if slashes < 0 {
				slashes = strings.Count(path, "/")
			}
			if slashes != want {
				continue
			}
		}
		if Match(r.Pattern, path, p) && r.satisfied(p) {
			return r
		}
	}
	return nil
}

func (r *Route) satisfied(p *Params) bool {
	for name, ok := range r.Constraints {
		if !ok(p.Get(name)) {
			return false
		}
	}
	for name, vals := range r.Values {
		if _, ok := vals[p.Get(name)]; !ok {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ErrorFunc answers a request the upstream could not: err is the
// transport's error, classified by Classify.
type ErrorFunc func(w http.ResponseWriter, r *http.Request, err error)

// Upstream forwards requests to one server.
type Upstream struct {
	Name string
	URL  *url.URL
	// Handler does the forwarding: a forward.Forwarder (lean, for plain
	// http upstreams without hooks) or an httputil.ReverseProxy.
	Handler http.Handler

	transport *http.Transport
	fwd       *forward.Forwarder
}

// UpstreamOptions configures NewUpstream.
type UpstreamOptions struct {
	// ConnectTimeout bounds dialing. Default 5s.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response header once
	// the request is written. Default 30s.
	ResponseHeaderTimeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size. Default 256.
	MaxIdleConnsPerHost int
	// OnError answers failed requests (502/504); required.
	OnError ErrorFunc
	// WrapTransport, if set, wraps the pooled transport, e.g. to add the
	// gateway's own credentials (upstreamauth.Transport).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Reuse is forward.Options.Reuse. Over Go's transport (https, or
	// WrapTransport), which cannot keep a connection to one client's
	// requests, ReusePerClient uses each connection once, as ReuseNone.
	Reuse forward.Reuse
	// OnUnsolicited is forward.Options.OnUnsolicited (the forwarder
	// only: Go's transport discards such bytes itself).
	OnUnsolicited func()
}

// NewUpstream returns an Upstream forwarding to u over a pooled transport.
// Hop-by-hop header fields (RFC 9110 §7.6.1, and those listed in
// Connection) are removed in both directions by httputil.ReverseProxy;
// X-Forwarded-For/-Host/-Proto are set from the inbound request, whose
// X-Forwarded-For the caller has already reduced to what trusted proxies
// added.
func NewUpstream(name string, u *url.URL, o UpstreamOptions) *Upstream {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = 30 * time.Second
	}
	up := &Upstream{Name: name, URL: u}
	if u.Scheme == "http" && o.WrapTransport == nil {
		// The lean forwarder: one goroutine per request, few allocations
		// (docs/benchmarks.md). It hands what it does not do itself
		// (upgrades, Expect, trailers) to a ReverseProxy of its own.
		f, err := forward.New(u, forward.Options{
			ConnectTimeout: o.ConnectTimeout, ResponseHeaderTimeout: o.ResponseHeaderTimeout,
			MaxIdleConns: o.MaxIdleConnsPerHost, OnError: o.OnError,
			Reuse: o.Reuse, OnUnsolicited: o.OnUnsolicited,
		})
		if err == nil {
			up.fwd, up.Handler = f, f
			return up
		}
	}
	// https, or floodgate's own credentials (a RoundTripper): a
	// ReverseProxy over a pooled transport, rewriting as the forwarder does.
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	up.transport = &http.Transport{
		Proxy:                 nil, // never an environment proxy: upstreams are addressed directly
		DialContext:           dialer.DialContext,
		MaxIdleConns:          o.MaxIdleConnsPerHost * 4,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		ForceAttemptHTTP2:     u.Scheme == "https",
		DisableKeepAlives:     o.Reuse != forward.ReuseShared,
	}
	var rt http.RoundTripper = up.transport
	if o.WrapTransport != nil {
		rt = o.WrapTransport(up.transport)
	}
	up.Handler = &httputil.ReverseProxy{
		Rewrite:      forward.Rewrite(u),
		Transport:    rt,
		BufferPool:   forward.BufferPool{},
		ErrorHandler: o.OnError,
	}
	return up
}

// CloseIdle closes the upstream's idle keep-alive connections.
func (u *Upstream) CloseIdle() {
	if u.transport != nil {
		u.transport.CloseIdleConnections()
	}
	if u.fwd != nil {
		u.fwd.CloseIdle()
	}
}

// Class is the kind of a forwarding failure.
type Class uint8

// Failure classes.
const (
	Unreachable Class = iota // connection refused, reset, DNS: 502
	Timeout                  // the upstream did not answer in time: 504
	Canceled                 // the client went away: nothing to answer
)

// Classify tells what kind of failure err is.
func Classify(err error) Class {
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return Timeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout
	}
	return Unreachable
}
