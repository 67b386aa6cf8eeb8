package h1server

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// A NetHTTPServer is net/http's server (server.engine: net/http) held to
// the request policy floodgate's own server applies (httpsyntax.Head.Refuse
// and CloseAfter): the exact head size, ambiguous framing, CONNECT and
// Host. Go's parser drops what the policy reads (the Content-Length of a
// chunked request, the Transfer-Encoding of an HTTP/1.0 one, the Host of
// an absolute-form one), so each connection's bytes are scanned as they
// are read, head by head, and the handler is wrapped to judge each
// request by its head before running.
//
// The scan follows the connection's framing: a head, then as many body
// bytes as its Content-Length, then the next head. After a chunked
// request the connection is closed (CloseAfter), so the scan stops there.
// A request whose head the scan could not pair with it is served as Go
// parsed it, judged by what is left (httpsyntax.ParsedHead), and its
// connection closed after it.
//
// A Handler that is a RefusalObserver is told of every request refused
// without it: by the policy, and by Go's server itself (a head Go's
// parser refuses, one over its own size limit, an unknown expectation).
// Go offers no hook for its own answers, so they are recognised as they
// are written: whatever the connection writes between the end of one
// response (http.StateIdle, or the connection's start) and the next
// handler's start can only be Go's answer to a request it refused.
type NetHTTPServer struct {
	*http.Server
	maxHeaderBytes int
	handler        http.Handler // the Handler s came with
}

// NewNetHTTPServer wraps s, whose Handler, MaxHeaderBytes (0: 64 KiB, as
// Server's), ConnContext and ConnState it takes over (calling those s
// had); set the rest before or after.
// s.MaxHeaderBytes becomes the exact limit of a head (net/http's own
// allows 4 KiB more, and refuses beyond that itself, with 431 too).
func NewNetHTTPServer(s *http.Server) *NetHTTPServer {
	max := s.MaxHeaderBytes
	if max <= 0 {
		max = 64 << 10
	}
	s.MaxHeaderBytes = max
	// "OPTIONS *" comes to the wrapper too, which judges it by the
	// policy before answering it as Go's server would: Go's own answer
	// skipped the policy (an empty Host, ambiguous framing: 200 here, 400
	// from floodgate's server).
	s.DisableGeneralOptionsHandler = true
	n := &NetHTTPServer{Server: s, maxHeaderBytes: max, handler: s.Handler}
	next := s.Handler
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.serve(next, w, r) })
	connState := s.ConnState
	s.ConnState = func(c net.Conn, st http.ConnState) {
		if sc, ok := c.(*scannedConn); ok && st == http.StateIdle {
			// The response is written whole: what comes before the
			// next handler is Go's own.
			sc.goAnswers.Store(true)
		}
		if connState != nil {
			connState(c, st)
		}
	}
	connContext := s.ConnContext
	s.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connContext != nil {
			ctx = connContext(ctx, c)
		}
		if sc, ok := c.(*scannedConn); ok {
			ctx = context.WithValue(ctx, scannedConnKey{}, sc)
		}
		return ctx
	}
	return n
}

// Serve serves ln with each connection scanned.
func (n *NetHTTPServer) Serve(ln net.Listener) error {
	return n.Server.Serve(scanningListener{ln, n.handler})
}

func (n *NetHTTPServer) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	var h httpsyntax.Head
	known := false
	if sc, ok := r.Context().Value(scannedConnKey{}).(*scannedConn); ok {
		sc.goAnswers.Store(false) // what is written now is this request's answer
		h, known = sc.take()
	}
	if !known {
		h = httpsyntax.ParsedHead(r.ProtoMajor, r.ProtoMinor, r.Method, r.Host)
	}
	scheme, authority := httpsyntax.Target(r.URL)
	if code, msg := h.Refuse(n.maxHeaderBytes, scheme, authority); code != 0 {
		refused(next, code)
		refuse(w, code, msg)
		return
	}
	// (What Refuse let through is framed as Go's parser framed it.)
	if !known || httpsyntax.CloseAfter(r.ProtoMinor, len(r.TransferEncoding) > 0, r.ContentLength) {
		w.Header()["Connection"] = []string{"close"}
	}
	if r.Method == http.MethodOptions && r.RequestURI == "*" {
		// A question about the server, not a resource: net/http's
		// answer (200, empty; at most 4 KiB of a body read), never the
		// handler's.
		w.Header()["Content-Length"] = []string{"0"}
		if r.ContentLength != 0 {
			io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 4<<10))
		}
		return
	}
	next.ServeHTTP(w, r)
}

// refuse answers a refused request as floodgate's server does
// (writeError) and closes the connection, after letting the answer arrive:
// the bytes after the head (a body, a smuggled request) are never read as
// a request.
func refuse(w http.ResponseWriter, code int, msg string) {
	nc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable: the same answer through w.
		w.Header()["Content-Type"] = []string{"text/plain; charset=utf-8"}
		w.Header()["Connection"] = []string{"close"}
		w.WriteHeader(code)
		text := http.StatusText(code)
		if msg != "" {
			text += ": " + msg
		}
		io.WriteString(w, text)
		return
	}
	defer nc.Close()
	nc.SetWriteDeadline(time.Now().Add(time.Second))
	writeError(brw.Writer, code, msg)
	lingerClose(nc)
}

type scannedConnKey struct{}

type scanningListener struct {
	net.Listener
	handler http.Handler // told of Go's own answers (RefusalObserver)
}

func (l scanningListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &scannedConn{Conn: c, handler: l.handler}
	sc.goAnswers.Store(true) // nothing is answered before a handler runs but by Go
	return sc, nil
}

// maxPendingHeads bounds the heads scanned ahead of their handlers (a
// client pipelining many requests): past it, the scan stops and the
// requests after are served as unpaired (closing the connection).
const maxPendingHeads = 16

// A scannedConn scans the request heads read from it. Reads on one
// connection do not overlap (net/http's server reads one at a time, its
// background read included); mu is for the handler taking a head.
type scannedConn struct {
	net.Conn

	// goAnswers holds from the connection's start, and from the end of
	// each response (http.StateIdle), until a handler starts: what is
	// written meanwhile is Go's answer to a request it refused, which
	// handler is told of (RefusalObserver).
	goAnswers atomic.Bool
	handler   http.Handler

	mu      sync.Mutex
	scan    httpsyntax.HeadScanner
	skip    int64 // body bytes before the next head
	stopped bool  // the framing cannot be followed further
	heads   []httpsyntax.Head
}

func (c *scannedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.scanBytes(p[:n])
	}
	return n, err
}

// Write tells the handler of an answer Go's server wrote itself: the
// status of the response that begins when goAnswers holds (Go writes its
// own answers in one Write, and closes the connection after them).
func (c *scannedConn) Write(p []byte) (int, error) {
	if c.goAnswers.Load() && c.goAnswers.Swap(false) {
		if code, ok := statusCode(p); ok {
			refused(c.handler, code)
		}
	}
	return c.Conn.Write(p)
}

// statusCode reads the status of the response whose first bytes are p.
func statusCode(p []byte) (int, bool) {
	if len(p) < len("HTTP/1.1 200") || string(p[:7]) != "HTTP/1." || p[8] != ' ' {
		return 0, false
	}
	code := 0
	for _, b := range p[9:12] {
		if b < '0' || b > '9' {
			return 0, false
		}
		code = code*10 + int(b-'0')
	}
	return code, true
}

func (c *scannedConn) scanBytes(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(b) > 0 && !c.stopped {
		if c.skip > 0 {
			k := min(int64(len(b)), c.skip)
			b, c.skip = b[k:], c.skip-k
			continue
		}
		b = b[c.scan.Write(b):]
		if !c.scan.Done() {
			return
		}
		h := c.scan.Head
		c.scan.Reset()
		switch {
		case h.Chunked(), h.ContentLengths > 0 && h.ContentLength < 0:
			// Closed after (CloseAfter), or refused by Go's parser.
			c.stopped = true
		case h.ContentLengths > 0:
			c.skip = h.ContentLength
		}
		if len(c.heads) >= maxPendingHeads {
			c.stopped = true
			return
		}
		c.heads = append(c.heads, h)
	}
}

// take returns the oldest head not yet taken: the request being handled's.
func (c *scannedConn) take() (httpsyntax.Head, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heads) == 0 {
		return httpsyntax.Head{}, false
	}
	h := c.heads[0]
	n := copy(c.heads, c.heads[1:])
	c.heads = c.heads[:n]
	return h, true
}

// RefuseConnect answers CONNECT with 501, as both engines do
// (httpsyntax.Head.Refuse), and passes every other request to h: for Go's
// server on a TLS listener (HTTP/1.1 and HTTP/2), whose heads are not
// scanned.
func RefuseConnect(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			refused(h, http.StatusNotImplemented)
			refuse(w, http.StatusNotImplemented, "CONNECT is not served")
			return
		}
		h.ServeHTTP(w, r)
	})
}
