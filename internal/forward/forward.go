// Package forward provides a lean HTTP/1.1 forwarder for plain-http
// upstreams: an http.Handler that does what floodgate's
// httputil.ReverseProxy setup does (internal/proxy.NewUpstream), with less
// work per request.
//
// A Forwarder keeps a pool of keep-alive connections to one upstream and
// serves each request on the handler's goroutine: it writes the request
// through the connection's bufio.Writer, parses the response head itself
// from the connection's bufio.Reader, and copies the body to the
// http.ResponseWriter. There are no per-connection goroutines, and no
// per-request timers or context watches: one timer per Forwarder, set
// while requests are in flight, ends the waits of those whose context is
// done or whose response head is late: on time for a deadline, up to 50ms
// late for a context canceled otherwise (see watchdog).
// The only other goroutines are the idle-connection sweeper's timer, and
// one per request whose body is large or of unknown length (so that an
// upstream answering before it has read the body is not deadlocked).
//
// Requests it does not handle itself (protocol upgrades such as WebSocket,
// CONNECT, Expect: 100-continue, declared request trailers) go to an
// internal httputil.ReverseProxy configured the same way, with the same
// Credential (floodgate's own, in place of the client's) when it has one.
package forward

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options configures New. Zero fields take their defaults.
type Options struct {
	// ConnectTimeout bounds dialing the upstream. Default 5s.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the response head, from
	// when the request has been written. Default 30s. It is enforced,
	// as the end of the request's context is, by one timer for the
	// Forwarder (watchdog): deadlines on time, a context canceled
	// otherwise within 50ms (a quarter of the timeout when that is
	// shorter).
	ResponseHeaderTimeout time.Duration
	// IdleTimeout is how long a pooled connection may stay idle before it
	// is closed. Default 90s.
	IdleTimeout time.Duration
	// MaxIdleConns is the size of the keep-alive pool. Default 256.
	MaxIdleConns int
	// OnError answers a request the upstream could not, when nothing has
	// been written to w yet; required. err classifies as
	// internal/proxy.Classify expects: context.Canceled when the request's
	// context was canceled, context.DeadlineExceeded when its deadline
	// passed, a net.Error whose Timeout() is true when the upstream did not
	// answer in time, anything else when it is unreachable or answered
	// something that is not HTTP/1.x.
	OnError func(w http.ResponseWriter, r *http.Request, err error)
	// OnBodyError, if set, is told of an upstream that failed after the
	// response's head went to the client (a reset, a body shorter than
	// its length, bad chunked framing, a timeout): the client's answer is
	// then cut off, and nothing may be written to w. err classifies as
	// OnError's. A failure to write to the client is not reported.
	OnBodyError func(w http.ResponseWriter, r *http.Request, err error)
	// Reuse says which requests a pooled connection may carry: any
	// (ReuseShared, the default), only those of the client connection
	// whose request it last carried (ReusePerClient), or none
	// (ReuseNone: closed after each response).
	Reuse Reuse
	// OnUnsolicited, if set, is called each time the upstream is found
	// to have sent bytes nobody asked for: after a complete response, or
	// on a pooled connection before its next use. The connection is
	// closed. It must not block.
	OnUnsolicited func()
	// Credential, if set, is floodgate's own credential to the upstream,
	// sent in place of the client's (see Credential).
	Credential Credential
}

// Reuse is what requests a pooled upstream connection may carry. What it
// guards against is an upstream that answers more than it was asked (a
// bug, or a compromised upstream): an unsolicited response that arrives
// while the connection already carries the next request is taken for
// that request's answer, and from then on every answer on the connection
// is one behind. With ReuseShared the next request may be another
// client's; ReusePerClient keeps each connection to the requests of one
// client connection, so a client can only receive answers meant for
// itself; ReuseNone uses each connection once.
type Reuse uint8

// The Reuse modes.
const (
	ReuseShared Reuse = iota
	ReusePerClient
	ReuseNone
)

// ClientConn returns what identifies r's client connection for
// ReusePerClient: its local address as the server put it in r's context
// (http.LocalAddrContextKey: one net.Addr per accepted connection, under
// net/http's server and h1server's), or nil. A pooled connection keeps it,
// which keeps it from being reused for another connection's address.
func ClientConn(r *http.Request) any {
	return r.Context().Value(http.LocalAddrContextKey)
}

// Defaults of Options.
const (
	DefaultConnectTimeout        = 5 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 90 * time.Second
	DefaultMaxIdleConns          = 256
)

// Limits on what an upstream may send.
const (
	// MaxHeaderBytes bounds a response head (status line and fields,
	// each informational response counted on its own) and a trailer
	// section.
	MaxHeaderBytes = 1 << 20
	// max1xx bounds the informational responses before the final one.
	max1xx = 16
	// syncBodyMax is the largest request body written before the
	// response is read, on the handler's goroutine; larger bodies and
	// bodies of unknown length are written by a goroutine of their own
	// while the response is read.
	syncBodyMax = 32 << 10
)

// A Forwarder forwards requests to one http:// upstream over a pool of
// keep-alive connections. It is safe for concurrent use.
//
// Hop-by-hop header fields (RFC 9110 §7.6.1: Connection, Keep-Alive,
// Proxy-Connection, Proxy-Authenticate, Proxy-Authorization, TE, Trailer,
// Transfer-Encoding, Upgrade, and those listed in Connection) are removed
// in both directions; "TE: trailers" is passed on when the client sent it.
// Forwarded and the client's X-Forwarded-Host are dropped; X-Forwarded-For
// is the inbound one (which the caller has reduced to what trusted proxies
// added) with the peer's address appended, X-Forwarded-Host is r.Host, as
// httputil.ProxyRequest.SetXForwarded sets them, and X-Forwarded-Proto
// is the inbound one when it is one "http" or "https" (a TLS-terminating
// proxy's: the caller removes a client's own), else http or https as the
// connection to floodgate was. The Host header is the target's.
//
// Once the response header has been written to the client, a failure
// (the upstream closing mid-body, the client going away) can only abort
// the response: ServeHTTP then panics with http.ErrAbortHandler, as
// httputil.ReverseProxy does, when running under an http.Server.
type Forwarder struct {
	addr     string // host:port to dial
	host     string // Host header
	basePath string // target path, when not "" or "/"
	baseRaw  string // its escaped form
	o        Options
	// drop and strip are the request fields not forwarded and the
	// response fields not passed on because of o.Credential.
	drop, strip []string
	dialer      net.Dialer
	fallback    *httputil.ReverseProxy
	fallbackTr  *http.Transport // the fallback's
	pool        pool
	watch       watchdog
}

var _ http.Handler = (*Forwarder)(nil)

// New returns a Forwarder to target, which must be an http:// URL with a
// host. o.OnError is required.
func New(target *url.URL, o Options) (*Forwarder, error) {
	if target == nil {
		return nil, errors.New("forward: no target")
	}
	if target.Scheme != "http" {
		return nil, fmt.Errorf("forward: target %q: scheme %q not supported, want http", target.Redacted(), target.Scheme)
	}
	if target.Host == "" {
		return nil, fmt.Errorf("forward: target %q: no host", target.Redacted())
	}
	if target.User != nil || target.Opaque != "" {
		return nil, fmt.Errorf("forward: target %q: user information and opaque URLs are not supported", target.Redacted())
	}
	if o.OnError == nil {
		return nil, errors.New("forward: Options.OnError is required")
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ResponseHeaderTimeout <= 0 {
		o.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = DefaultMaxIdleConns
	}
	host := strings.TrimSuffix(target.Host, ":")
	port := target.Port()
	if port == "" {
		port = "80"
	}
	f := &Forwarder{
		addr:   net.JoinHostPort(target.Hostname(), port),
		host:   host,
		o:      o,
		dialer: net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second},
	}
	if !validHeaderValue(host) {
		return nil, fmt.Errorf("forward: target %q: invalid host", target.Redacted())
	}
	if target.Path != "" && target.Path != "/" {
		f.basePath, f.baseRaw = target.Path, target.EscapedPath()
	}
	if o.Credential != nil {
		f.drop, f.strip = o.Credential.Fields()
	}
	f.pool.init(o.MaxIdleConns, o.IdleTimeout)
	f.pool.unsolicited = o.OnUnsolicited
	f.watch.tick = watchTick(o.ResponseHeaderTimeout)
	f.fallback, f.fallbackTr = newReverseProxy(target, o, &f.dialer)
	return f, nil
}

// newReverseProxy returns the ReverseProxy that serves what the Forwarder
// does not, and its transport: set up as internal/proxy.NewUpstream sets
// up its own, with the Forwarder's credential.
func newReverseProxy(u *url.URL, o Options, d *net.Dialer) (*httputil.ReverseProxy, *http.Transport) {
	tr := &http.Transport{
		Proxy:                 nil, // upstreams are addressed directly
		DialContext:           d.DialContext,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConns,
		IdleConnTimeout:       o.IdleTimeout,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		// Accept-Encoding as the client sent it, and the answer's
		// bytes as the upstream sent them: the transport would otherwise
		// ask for gzip and decompress the answer itself.
		DisableCompression: true,
		// Go's transport cannot keep a connection to one client's
		// requests: with ReusePerClient, as with ReuseNone, its
		// connections are used once (it serves only upgrades, Expect and
		// trailers here).
		DisableKeepAlives: o.Reuse != ReuseShared,
	}
	var rt http.RoundTripper = tr
	if o.Credential != nil {
		rt = &Transport{Credential: o.Credential, Base: tr}
	}
	return &httputil.ReverseProxy{
		Rewrite:      Rewrite(u),
		Transport:    rt,
		BufferPool:   BufferPool{},
		ErrorHandler: o.OnError,
	}, tr
}

// Rewrite returns the httputil.ReverseProxy rewrite that does what a
// Forwarder does to a request: the target's scheme, host and base path,
// the Host of the target, X-Forwarded-For/-Host/-Proto set from the
// inbound request, whose X-Forwarded-For the caller has already reduced
// to what trusted proxies added, and no trailers.
func Rewrite(u *url.URL) func(*httputil.ProxyRequest) {
	return func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme = u.Scheme
		pr.Out.URL.Host = u.Host
		pr.Out.URL.Path = joinPath(u.Path, pr.In.URL.Path)
		if pr.In.URL.RawPath != "" {
			pr.Out.URL.RawPath = joinPath(u.EscapedPath(), pr.In.URL.RawPath)
		} else {
			pr.Out.URL.RawPath = ""
		}
		pr.Out.Host = ""
		pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
		pr.SetXForwarded()
		pr.Out.Header["X-Forwarded-Proto"] = []string{forwardedProto(pr.In)}
		// Request trailers are not forwarded, as nginx does not forward
		// them: a field removed from the head (Authorization, the
		// session cookie) must not reach the upstream after the body,
		// and no trailer is announced that is not sent.
		pr.Out.Trailer = nil
	}
}

// forwardedProto is the X-Forwarded-Proto a forwarded request carries:
// the inbound one when r has exactly one, http or https (in any case),
// which the caller leaves only when a trusted proxy sent it (one that
// terminates TLS in front of floodgate says https); else the scheme of the
// connection to floodgate.
func forwardedProto(r *http.Request) string {
	if v := r.Header["X-Forwarded-Proto"]; len(v) == 1 {
		switch {
		case strings.EqualFold(v[0], "https"):
			return "https"
		case strings.EqualFold(v[0], "http"):
			return "http"
		}
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// CloseIdle closes the idle keep-alive connections. Connections in use
// are pooled again when their requests end.
func (f *Forwarder) CloseIdle() {
	f.pool.closeIdle()
	f.fallbackTr.CloseIdleConnections()
}

// ServeHTTP forwards r to the upstream and copies the response to w.
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if fallback(r) {
		f.fallback.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	var cred authField
	if c := f.o.Credential; c != nil && !echoed(r) {
		var err error
		if cred.name, cred.value, err = c.Authorize(r); err != nil {
			f.o.OnError(w, r, err) // nothing was sent
			return
		}
	}
	// A request without a body that is safe to repeat is sent again, on a
	// new connection, when a pooled connection turns out to be closed
	// before any of the response arrived, as net/http's Transport does.
	replayable := r.ContentLength == 0 && idempotent(r)
	now := monoNow()
	var owner any
	if f.o.Reuse == ReusePerClient {
		owner = ClientConn(r)
	}
	first := true // of the credential's refusals
	for attempt := 0; ; attempt++ {
		var c *conn
		if attempt == 0 {
			// Every pooled connection is checked before use: unread bytes
			// on it would be taken for this request's response.
			switch {
			case f.o.Reuse == ReuseShared:
				c = f.pool.get(now, true)
			case owner != nil:
				c = f.pool.getFor(now, owner)
			}
		}
		if c == nil {
			var err error
			if c, err = f.dial(ctx); err != nil {
				f.o.OnError(w, r, err)
				return
			}
			now = monoNow()
		}
		c.owner = owner
		x := exchange{f: f, c: c, w: w, r: r, ctx: ctx, now: now, cred: cred}
		switch x.run(replayable && c.reused) {
		case served:
			return
		case refused:
			// The upstream refused floodgate's credential: the request
			// goes once more with another, on a connection as the first
			// went, or is answered as the Credential says.
			next, err := f.o.Credential.Refused(r, cred.value, first)
			if err == nil && !first {
				err = errRefusedAgain
			}
			if err != nil {
				f.o.OnError(w, r, err)
				return
			}
			cred.value, first, attempt = next, false, -1
			now = monoNow()
		}
	}
}

// An authField is the header field of floodgate's credential on a request.
type authField struct{ name, value string }

// fallback reports whether r goes to the ReverseProxy.
func fallback(r *http.Request) bool {
	if r.Method == http.MethodConnect || r.URL.Opaque != "" || r.Trailer != nil {
		return true
	}
	if _, ok := r.Header["Expect"]; ok {
		return true
	}
	return hasToken(r.Header["Connection"], "upgrade")
}

// idempotent reports whether r may be sent twice (RFC 9110 §9.2.2, and
// the Idempotency-Key fields net/http honours).
func idempotent(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := r.Header["Idempotency-Key"]
	_, b := r.Header["X-Idempotency-Key"]
	return a || b
}

// dial opens a new connection to the upstream.
func (f *Forwarder) dial(ctx context.Context) (*conn, error) {
	nc, err := f.dialer.DialContext(ctx, "tcp", f.addr)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, dialError{fmt.Errorf("forward: dial %s: %w", f.addr, cerr)}
		}
		return nil, dialError{fmt.Errorf("forward: dial: %w", err)}
	}
	return newConn(nc), nil
}

// dialError is a failure to connect to the upstream: nothing of the
// request was sent.
type dialError struct{ err error }

func (e dialError) Error() string { return e.err.Error() }
func (e dialError) Unwrap() error { return e.err }

// IsDial reports whether err is a failure to connect to the upstream
// (refused, timed out, or given up while connecting): the upstream never
// saw the request.
func IsDial(err error) bool {
	if errors.As(err, new(dialError)) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func joinPath(base, p string) string {
	if base == "" || base == "/" {
		return p
	}
	if base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	return base + p
}

// copyBufferSize is the size of the pooled buffers that bodies larger
// than a connection's read buffer are copied through.
const copyBufferSize = 32 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, copyBufferSize); return &b }}

// BufferPool is an httputil.BufferPool of the forwarder's copy buffers.
type BufferPool struct{}

// Get returns a buffer of copyBufferSize bytes.
func (BufferPool) Get() []byte { return *buffers.Get().(*[]byte) }

// Put returns b to the pool.
func (BufferPool) Put(b []byte) { buffers.Put(&b) }

// timeoutError is a net.Error whose Timeout is true.
type timeoutError struct{ msg string }

func (e *timeoutError) Error() string   { return e.msg }
func (e *timeoutError) Timeout() bool   { return true }
func (e *timeoutError) Temporary() bool { return true }

var errHeaderTimeout error = &timeoutError{"forward: timeout awaiting response headers"}

var _ net.Error = (*timeoutError)(nil)
