package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/httpsyntax"
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
	// Fences keep the paths under a prefix for one group's routes.
	Fences []Fence
}

// A Fence keeps the paths under Prefix for the routes of Group: a path
// under it that none of them matches matches no route at all, rather
// than a later route of another group.
type Fence struct {
	Group string
	// Prefix is the literal segments a path must start with, compared
	// without regard to ASCII case (config.ParsePrefix).
	Prefix []string
}

// Match returns the first route matching method and the cleaned path,
// filling p with its parameters, or nil. A path under a fence is only
// matched by the fence's group.
func (rt *Router) Match(method, path string, p *Params) *Route {
	fenced, isFenced := rt.Fenced(path)
	slashes := -1 // counted once, for the first pattern that asks
	for _, r := range rt.Routes {
		if len(r.Methods) > 0 && !contains(r.Methods, method) {
			continue
		}
		if isFenced && r.Group != fenced.Group {
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

// Fenced returns the fence the cleaned path is under (the one with the
// longest prefix), if any. It does not allocate.
func (rt *Router) Fenced(path string) (Fence, bool) {
	best := -1
	for i, f := range rt.Fences {
		if underPrefix(path, f.Prefix) && (best < 0 || len(f.Prefix) > len(rt.Fences[best].Prefix)) {
			best = i
		}
	}
	if best < 0 {
		return Fence{}, false
	}
	return rt.Fences[best], true
}

// underPrefix reports whether path's first segments are prefix's,
// ignoring ASCII case: "/api", "/api/" and "/API/x" are under [api];
// "/apis" is not.
func underPrefix(path string, prefix []string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	rest := path[1:]
	for _, seg := range prefix {
		s, tail, more := strings.Cut(rest, "/")
		if !httpsyntax.EqualFoldASCII(s, seg) {
			return false
		}
		if !more {
			tail = ""
		}
		rest = tail
	}
	return true
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
	// http upstreams, with floodgate's credentials or without) or an
	// httputil.ReverseProxy (https, or WrapTransport).
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
	// Credential, if set, is floodgate's own credential to the upstream
	// (internal/upstreamauth), sent in place of the client's: by the lean
	// forwarder, or by a forward.Transport over Go's.
	Credential forward.Credential
	// WrapTransport, if set, wraps the pooled transport (under the
	// Credential's), and makes the upstream one of Go's transport even
	// when its scheme is http.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Reuse is forward.Options.Reuse. Over Go's transport (https, or
	// WrapTransport), which cannot keep a connection to one client's
	// requests, ReusePerClient uses each connection once, as ReuseNone.
	Reuse forward.Reuse
	// OnUnsolicited is forward.Options.OnUnsolicited (the forwarder
	// only: Go's transport discards such bytes itself).
	OnUnsolicited func()
	// OnBodyError is forward.Options.OnBodyError (the lean forwarder's:
	// an upstream that failed after the head went to the client).
	OnBodyError ErrorFunc
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
			Reuse: o.Reuse, OnUnsolicited: o.OnUnsolicited, OnBodyError: o.OnBodyError,
			Credential: o.Credential,
		})
		if err == nil {
			up.fwd, up.Handler = f, f
			return up
		}
	}
	// https, or a wrapped transport: a ReverseProxy over a pooled
	// transport, rewriting as the forwarder does.
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
		DisableCompression:    true, // Accept-Encoding and the answer's bytes as sent
		ForceAttemptHTTP2:     u.Scheme == "https",
		DisableKeepAlives:     o.Reuse != forward.ReuseShared,
	}
	var rt http.RoundTripper = up.transport
	if o.WrapTransport != nil {
		rt = o.WrapTransport(up.transport)
	}
	if o.Credential != nil {
		rt = &forward.Transport{Credential: o.Credential, Base: rt}
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

// Class is the kind of a forwarding failure: what the gateway answers
// (502, 504 or nothing), and what the log and
// floodgate_upstream_errors_total call it (String).
type Class uint8

// Failure classes. Both forwarders, the lean forward.Forwarder and
// httputil.ReverseProxy, report their failures to the same ErrorFunc, so
// that Classify sees them all.
const (
	Unreachable Class = iota // none of the others: DNS, no route, TLS handshake, no credentials: 502
	Timeout                  // the upstream did not answer in time (connect, response header, total): 504
	Canceled                 // the client went away: nothing to answer, not the upstream's failure
	Refused                  // connection refused (nothing listens): 502
	Reset                    // the connection was reset, or closed before a response: 502
	BadResponse              // the upstream answered something that is not HTTP/1.x, or too large a head: 502
)

// classNames are the classes' names in logs and metrics.
var classNames = [...]string{
	Unreachable: "unreachable", Timeout: "timeout", Canceled: "canceled",
	Refused: "refused", Reset: "reset", BadResponse: "bad_response",
}

// String returns the class's name in logs and metrics: unreachable,
// timeout, canceled, refused, reset or bad_response.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// UpstreamFailures lists the classes that are an upstream's failure (not
// Canceled), by name: the kind label's values of
// floodgate_upstream_errors_total.
func UpstreamFailures() []string {
	return []string{Refused.String(), Timeout.String(), Reset.String(), BadResponse.String(), Unreachable.String()}
}

// Classify tells what kind of failure err is. A canceled context wins
// over what the failure looked like (the client left, and its request was
// torn down), then a timeout, then what the connection or the response
// said.
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
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case forward.IsBadResponse(err), badResponse(err):
		return BadResponse
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return Reset
	}
	return Unreachable
}

// Sent reports whether a request that failed with err reached the
// upstream, which may then have spent time on it: not when connecting to
// it failed (refused, timed out, given up), nor when it could not be
// reached at all (DNS, TLS, no credentials).
func Sent(err error) bool {
	switch Classify(err) {
	case Refused, Unreachable:
		return false
	}
	return !forward.IsDial(err)
}

// badResponse reports whether err is net/http's Transport's word for a
// response it could not parse. Those errors are of unexported types (or
// none), so their text is what says so; TestClassifyReverseProxy holds
// these phrases to what the Transport writes against real servers.
func badResponse(err error) bool {
	var pe textproto.ProtocolError
	if errors.As(err, &pe) {
		return true
	}
	s := err.Error()
	for _, phrase := range [...]string{"malformed HTTP", "malformed MIME header", "server response headers exceeded", "Content-Length", "transfer encoding"} {
		if strings.Contains(s, phrase) {
			return true
		}
	}
	return false
}
