package h1server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// Connection states, for Shutdown: only an idle connection (between
// requests) is closed from outside.
const (
	stateIdle int32 = iota
	stateActive
	stateClosed
	stateHijacked
)

// conn is one client connection and what it reuses from request to request.
type conn struct {
	srv        *Server
	rwc        net.Conn
	remoteAddr string
	base       context.Context
	state      atomic.Int32
	served     bool // a request has been answered: waiting is idleness
	afterPOST  bool // the last request answered was a POST
	linger     bool // closing with unread input: give the answer time to arrive before the reset

	// next, when the connection underneath has one, is told before the
	// wait for a keep-alive client's next request (rawio's AwaitNext).
	next nextAwaiter

	r  *connReader
	br *bufio.Reader
	bw *bufio.Writer
	w  response // reused: reset for every request

	// The requests' context, the request handed to the handler and its
	// URL and header, reused while nobody looks at the context
	// (requestContext).
	ctx *requestContext
	req *http.Request
	hb  *headBuffers

	// head is what the bytes of the head being read said (connReader
	// scans them while scan is set).
	head httpsyntax.HeadScanner
}

func newConn(s *Server, rwc net.Conn, base context.Context) *conn {
	c := &conn{srv: s, rwc: rwc, base: context.WithValue(base, http.LocalAddrContextKey, rwc.LocalAddr())}
	if a := rwc.RemoteAddr(); a != nil {
		c.remoteAddr = a.String()
	}
	c.next = findNextAwaiter(rwc)
	c.r = &connReader{conn: c, watchSlot: -1}
	c.r.cond = sync.NewCond(&c.r.mu)
	c.w.conn = c
	return c
}

// A nextAwaiter is told that the next read begins a new request, after an
// answer (rawio.Conn).
type nextAwaiter interface{ AwaitNext() }

// findNextAwaiter looks for a nextAwaiter under nc's wrappers (those with
// an Unwrap method, as the listeners' own).
func findNextAwaiter(nc net.Conn) nextAwaiter {
	for range 8 {
		if a, ok := nc.(nextAwaiter); ok {
			return a
		}
		u, ok := nc.(interface{ Unwrap() net.Conn })
		if !ok {
			return nil
		}
		nc = u.Unwrap()
	}
	return nil
}

// closeIfIdle closes the connection if it is between requests (Shutdown).
func (c *conn) closeIfIdle() {
	if c.state.CompareAndSwap(stateIdle, stateClosed) {
		c.rwc.Close()
	}
}

func (c *conn) serve() {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.srv.logf("h1server: panic serving %s: %v\n%s", c.remoteAddr, v, buf)
		}
		if c.state.Load() != stateHijacked {
			c.state.Store(stateClosed)
			if c.linger {
				c.lingerClose()
			}
			c.rwc.Close()
			c.release()
		}
		if c.ctx != nil {
			c.ctx.cancel()
		}
		c.srv.trackConn(c, false)
	}()
	// The reader (4 KiB) is taken when the connection waits for its
	// first request, or once that request's first byte has arrived when
	// many connections are open (Server.IdleBuffersUpTo), and the writer
	// (16 KiB) when a head has arrived (serveOne): a connection whose
	// client is slow to send a head (slowloris) costs the reader alone.
	for {
		if !c.serveOne() {
			return
		}
	}
}

// rstAvoidanceDelay is how long a connection closed with unread input
// waits after its answer, as net/http's does: closing at once would make
// the kernel send a reset that can destroy the answer on its way.
const rstAvoidanceDelay = 500 * time.Millisecond

// lingerClose flushes, closes the writing side, and waits a little.
func (c *conn) lingerClose() {
	if c.bw != nil {
		c.bw.Flush()
	}
	lingerClose(c.rwc)
}

// lingerClose closes nc's writing side and waits until the client closes
// its side (or resets), at most rstAvoidanceDelay: a client that already
// left costs nothing.
func lingerClose(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		nc.SetReadDeadline(time.Now().Add(rstAvoidanceDelay))
		io.Copy(io.Discard, nc)
	}
}

// release returns the buffers to their pools (a writer holding unsent
// bytes stays).
func (c *conn) release() {
	if c.br != nil {
		c.br.Reset(nil)
		bufioReaderPool.Put(c.br)
		c.br = nil
	}
	if c.bw != nil && c.bw.Buffered() == 0 {
		c.bw.Reset(nil)
		bufioWriterPool.Put(c.bw)
		c.bw = nil
	}
}

// serveOne reads one request, runs the handler and finishes the response.
// It reports whether the connection may carry another request.
func (c *conn) serveOne() bool {
	s := c.srv
	// Between requests: idle, closable by Shutdown.
	c.state.Store(stateIdle)
	if s.inShutdown.Load() {
		return false
	}
	waiting := c.br == nil || c.br.Buffered() == 0
	if waiting {
		// Before its first request, a connection has ReadHeaderTimeout
		// to start one (as with net/http): an idle keep-alive timeout
		// for connections that never sent anything would let a client
		// hold sockets for nothing.
		d := s.idleTimeout()
		if !c.served && s.ReadHeaderTimeout > 0 {
			d = s.ReadHeaderTimeout
		}
		c.r.beginHead(d)
	} else {
		c.r.beginHead(0)
	}
	lean := waiting && s.lean()
	if lean {
		// Many connections are open and nothing of this one's next
		// request has arrived: until its first byte does, it gives its
		// buffers back to the pools and waits on a one-byte read, as
		// nginx frees an idle keep-alive connection's buffers. An idle
		// connection then costs its goroutine and a few small
		// structures, not 20 KiB of buffers; a request, one read more.
		c.release()
		if err := c.r.awaitByte(); err != nil {
			return false
		}
	}
	if c.br == nil {
		c.br = newBufioReader(c.r)
	}
	// What arrives belongs to the next request's head: the limit, set
	// once for the head, leaves room for the bytes read with it (a body,
	// the next request); the head's own size is checked exactly below.
	limit := s.maxHeaderBytes()
	c.r.setReadLimit(int64(limit + headSlack - c.br.Buffered()))
	// A connection's first request is read from its first byte; a later
	// one, as net/http's server does, only once 4 bytes have arrived: a
	// keep-alive connection that ends with fewer (no request is that
	// short) is closed without an answer.
	if c.served {
		if waiting && !lean && c.next != nil {
			// The answer is written and nothing of the next request
			// is buffered: if the last read left the socket empty,
			// the read waits for the client without trying first.
			// (The first time, this starts the connection's held
			// read, a goroutine: not while many connections are open,
			// when an idle one keeps as little as it can.)
			c.next.AwaitNext()
		}
		if _, err := c.br.Peek(4); err != nil {
			return false
		}
	} else if c.br.Buffered() == 0 {
		if _, err := c.br.Peek(1); err != nil {
			return false
		}
	}
	if !c.state.CompareAndSwap(stateIdle, stateActive) {
		return false // closed by Shutdown
	}
	return c.readAndHandle(limit)
}

// readAndHandle reads the request whose first bytes have arrived, runs
// the handler and finishes the response. Apart from serveOne, whose
// frame is on the stack while a connection waits: a small one keeps an
// idle connection's goroutine on its first stack.
func (c *conn) readAndHandle(limit int) bool {
	s := c.srv
	if s.ReadHeaderTimeout <= 0 && s.idleTimeout() > 0 {
		c.r.clearDeadline() // the head may take its time
	}
	// Empty lines before a request line (RFC 9112 section 2.2: a server
	// SHOULD ignore at least one). Before the first request, one is
	// ignored; after a request, net/http's rule, so that both engines
	// read a keep-alive connection alike: up to 4 CR or LF bytes after a
	// POST (the CR LF some old clients send after its body), none after
	// any other method.
	if !c.served {
		if p, _ := c.br.Peek(2); len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
			n := 1
			if len(p) > 1 && p[0] == '\r' && p[1] == '\n' {
				n = 2
			}
			c.br.Discard(n)
		}
	} else if c.afterPOST {
		p, _ := c.br.Peek(4)
		n := 0
		for n < len(p) && (p[n] == '\r' || p[n] == '\n') {
			n++
		}
		c.br.Discard(n)
	}
	// The plain head of nearly every request is read here, already
	// arrived whole (so no header deadline to set); any other, and any
	// error, by net/http's parser.
	if c.ctx == nil {
		c.ctx, c.req, c.hb = newRequestContext(c.base), new(http.Request), new(headBuffers)
	}
	var plain http.Request
	req := &plain
	buffered := c.br.Buffered()
	fieldsChecked := readPlainRequestInto(c.br, req, c.hb)
	var code int
	var msg string
	if fieldsChecked {
		// No framing fields, no CONNECT, origin form: the head's size
		// and its Host are left to judge.
		if code, msg = httpsyntax.RefuseSize(buffered-c.br.Buffered(), limit); code == 0 {
			hosts := 0
			if req.Host != "" { // an empty one is not plain
				hosts = 1
			}
			code, msg = httpsyntax.RefuseHost(req.ProtoMinor, hosts, req.Host, "", "")
		}
	} else {
		// The rest of the head has ReadHeaderTimeout to arrive.
		if d := s.ReadHeaderTimeout; d > 0 && c.served {
			// (The first request keeps the deadline set at accept.)
			c.r.setHeadDeadline(d)
		}
		// The head's bytes are scanned as they are read, for what Go's
		// parser drops (httpsyntax.Head).
		c.r.startScan(c.br)
		var err error
		req, err = http.ReadRequest(c.br)
		c.r.scan = nil
		if err != nil {
			c.takeWriter()
			c.rejectRequest(err)
			return false
		}
		// What net/http's server checks first, then the policy.
		if code, msg = checkRequest(req, c.head.Hosts); code == 0 {
			scheme, authority := httpsyntax.Target(req.URL)
			code, msg = c.head.Refuse(limit, scheme, authority)
		}
	}
	c.r.setReadLimit(-1)
	c.takeWriter()
	if code != 0 {
		// Unread bytes (a body, a smuggled request) may follow: let the
		// answer arrive before the connection closes.
		c.linger = true
		c.writeError(code, msg)
		return false
	}
	return c.handle(req)
}

// headSlack is how far past the head's limit a connection is read while
// its head is: bytes read with the head (a body, the next request) that
// are not the head's. The head's own size is held to the limit exactly.
const headSlack = 4096

// takeWriter gives the connection its writer, once a head has arrived.
func (c *conn) takeWriter() {
	if c.bw == nil {
		c.bw = newBufioWriter(c.rwc)
	}
}

// rejectRequest answers a request that could not be read, as net/http's
// server does: nothing for a client that left or timed out, 431 for a head
// over the limit, 501 for a transfer coding other than chunked, 400
// otherwise. The connection is then closed. A head cut off by
// ReadHeaderTimeout gets nothing wherever the cut falls: the parser sees
// a request line cut short as malformed (which net/http's server answers
// 400), so the connection's own read error decides.
func (c *conn) rejectRequest(err error) {
	switch {
	case c.r.hitReadLimit():
		c.writeError(http.StatusRequestHeaderFieldsTooLarge, "")
	case errors.Is(err, io.EOF), isReadError(err), c.r.readErr != nil:
		// The client went away before a request, or was too slow (a
		// head cut off by ReadHeaderTimeout, wherever the cut falls):
		// nobody to answer. (A head cut short by the end of the
		// connection, io.ErrUnexpectedEOF, gets net/http's 400: the
		// client may still be reading.)
	case strings.HasPrefix(err.Error(), "unsupported transfer encoding"),
		strings.HasPrefix(err.Error(), "too many transfer encodings"):
		c.writeError(http.StatusNotImplemented, "unsupported transfer encoding")
	default:
		c.writeError(http.StatusBadRequest, "")
	}
}

// isReadError reports a failed read from the connection (a timeout, a
// reset), as opposed to a request that could not be parsed (a
// *url.Error is a net.Error too: not that).
func isReadError(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "read" {
		return true
	}
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// checkRequest applies what net/http's server checks after parsing a
// request that is not plain (readPlainRequest admits no version, name or
// value it refuses): the protocol version, and header names and values.
// Host, framing and CONNECT are httpsyntax's policy.
//
// Go's server lets one request line of another version through,
// "PRI * HTTP/2.0" (the HTTP/2 preface, for handlers that take the
// connection over), and checks its Host and fields before the handler
// refuses it (505, Head.Refuse): so does this, so that a malformed one
// gets the same 400 from either engine. hosts is the number of its Host
// field lines (http.ReadRequest leaves their value in req.Host only).
func checkRequest(req *http.Request, hosts int) (int, string) {
	if req.ProtoMajor != 1 {
		if req.ProtoMajor != 2 || req.ProtoMinor != 0 || req.Method != "PRI" || req.RequestURI != "*" {
			return http.StatusHTTPVersionNotSupported, "unsupported protocol version"
		}
		// The bare preface (no fields at all) is not asked for a Host.
		if hosts == 0 && len(req.Header) > 0 {
			return http.StatusBadRequest, "missing required Host header"
		}
		if hosts == 1 && !httpguts.ValidHostHeader(req.Host) {
			return http.StatusBadRequest, "malformed Host header"
		}
	}
	for k, vv := range req.Header {
		if !validFieldName(k) {
			return http.StatusBadRequest, "invalid header name"
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return http.StatusBadRequest, "invalid header value"
			}
		}
	}
	return 0, ""
}

// writeError answers a request that never reached the handler, and
// closes the connection after it. The handler is told first
// (RefusalObserver): by the time the client has the answer, it is
// counted.
func (c *conn) writeError(code int, msg string) {
	refused(c.srv.Handler, code)
	c.rwc.SetWriteDeadline(time.Now().Add(time.Second))
	writeError(c.bw, code, msg)
}

// writeError writes the answer to a request refused before any handler,
// framed by the connection's close, as net/http's server writes its own.
func writeError(bw *bufio.Writer, code int, msg string) {
	text := http.StatusText(code)
	if msg != "" {
		text += ": " + msg
	}
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(statusLine(code))
	bw.WriteString("Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")
	bw.WriteString(text)
	bw.Flush()
}

// maxKeptFields bounds the header a connection keeps for its next request:
// a head with more fields leaves its map and values to the collector.
const maxKeptFields = 32

// handle runs the handler for req and finishes its response. It reports
// whether the connection may carry another request.
func (c *conn) handle(parsed *http.Request) bool {
	ctx, req := c.ctx, c.req
	defer func() {
		if ctx.end() {
			// Nothing of this request stays with an idle connection, nor
			// the room a head with many fields made (a map never shrinks).
			*req = *(&http.Request{}).WithContext(ctx)
			if len(c.hb.header) > maxKeptFields || cap(c.hb.vals) > maxKeptFields {
				c.hb = new(headBuffers)
			} else {
				c.hb.empty()
			}
		} else {
			c.ctx, c.req, c.hb = nil, nil, nil // for a request of their own
		}
	}()
	c.r.startRequest(ctx)
	// A copy with the context (WithContext's copy stays on the stack);
	// parsed itself stays with the caller.
	*req = *parsed.WithContext(ctx)
	req.RemoteAddr = c.remoteAddr

	w := &c.w
	w.reset(req)
	defer w.release()
	if httpsyntax.CloseAfter(req.ProtoMinor, len(req.TransferEncoding) > 0, req.ContentLength) {
		w.closeAfter = true
	}
	if v := req.Header["Expect"]; len(v) > 0 && v[0] != "" && !expectsContinue(req) { // Header.Get, without canonicalizing a constant
		refused(c.srv.Handler, http.StatusExpectationFailed)
		w.closeAfter = true
		w.WriteHeader(http.StatusExpectationFailed)
		w.finish()
		return false
	}
	var body *requestBody
	if req.Body != http.NoBody {
		// One per request: a Read after the handler returned (by a
		// goroutine it started) finds it closed, never the next
		// request's bytes.
		body = &requestBody{rc: req.Body, w: w}
		w.body = body
		// Sent before the body's first read, if the handler reads it.
		w.continuePending = expectsContinue(req) && req.ProtoAtLeast(1, 1) && req.ContentLength != 0
		req.Body = body
	} else {
		c.r.arm()
	}
	handled := false
	defer func() {
		if !handled { // the handler panicked: nothing may read on
			body.shut()
			c.r.disarm()
		}
	}()
	if req.Method == http.MethodOptions && req.RequestURI == "*" {
		// A question about the server, not a resource: net/http's
		// answer (200, empty), never the handler's.
		w.header["Content-Length"] = []string{"0"}
	} else {
		c.srv.Handler.ServeHTTP(w, req)
	}
	handled = true
	if w.hijacked {
		return false
	}
	// The body first, then the watch: a Read finishing now could arm it
	// again.
	if body.shut() {
		// A goroutine of the handler's was reading it: where the next
		// request starts is unknown.
		w.closeAfter = true
		c.linger = true
	}
	c.r.disarm()
	w.finish()
	c.served = true
	c.afterPOST = req.Method == http.MethodPost
	if body != nil && !body.atEOF() {
		// Bytes of this body may still be on the wire (full duplex, or a
		// connection closed for its framing): never parse them as a
		// request, and do not reset the answer away.
		w.closeAfter = true
		c.linger = true
	}
	return !w.closeAfter && !w.failed
}

func (b *requestBody) atEOF() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.eof
}

func expectsContinue(req *http.Request) bool {
	v := req.Header["Expect"]
	return len(v) == 1 && strings.EqualFold(v[0], "100-continue")
}

// requestBody is the handler's view of the request body: it sends
// 100 Continue before the first read when the client asked for it, and
// notes when the body has been read to its end (then the connection may be
// watched for the client going away). Reads hold mu; once shut (the
// handler returned), reads fail.
type requestBody struct {
	rc io.ReadCloser
	w  *response

	mu     sync.Mutex
	eof    bool  // read to its end
	ended  bool  // the handler returned (shut)
	closed bool  // the handler closed it
	err    error // a read failed: the connection cannot carry another request
}

func (b *requestBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.ended || b.closed:
		return 0, http.ErrBodyReadAfterClose
	case b.eof:
		return 0, io.EOF
	case b.err != nil:
		return 0, b.err
	}
	if err := b.w.sendContinue(); err != nil {
		b.err = err
		return 0, err
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
		b.w.conn.r.arm()
	} else if err != nil {
		// A malformed or truncated body.
		b.err = err
	}
	return n, err
}

func (b *requestBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// shut ends the handler's use of the body: later reads fail. A read in
// progress (a goroutine of the handler's) is interrupted first; shut then
// reports true. On a nil body, it does nothing.
func (b *requestBody) shut() (interrupted bool) {
	if b == nil {
		return false
	}
	if !b.mu.TryLock() {
		c := b.w.conn
		// Under the reader's lock, and marked as no head's deadline: the
		// read being interrupted must not clear it (handlerReadLocked).
		c.r.mu.Lock()
		c.r.headDeadline, c.r.ownDeadline = 0, false
		c.rwc.SetReadDeadline(aLongTimeAgo)
		c.r.mu.Unlock()
		b.mu.Lock()
		c.r.clearDeadline()
		interrupted = true
	}
	b.ended = true
	b.mu.Unlock()
	return interrupted
}

// maxDrain is how much of an unread body the server reads after the
// handler, so that the connection can carry another request.
const maxDrain = 256 << 10

// drain reads what is left of the body, up to 256 KiB (net/http's
// allowance), so that the connection can carry the next request. It
// reports whether the body was read to its end. neverAsked: the client
// waits for 100 Continue, which was not sent: it may not send the body,
// and what it sends instead cannot be told apart from it. A body another
// goroutine is reading is not waited for (false).
func (b *requestBody) drain(neverAsked bool) bool {
	if !b.mu.TryLock() {
		return false
	}
	defer b.mu.Unlock()
	switch {
	case b.eof:
		return true
	case b.err != nil, neverAsked, b.w.req.ContentLength > maxDrain:
		// More than the allowance is declared: not worth waiting for
		// (net/http's server does not read it either).
		return false
	}
	_, err := io.CopyN(io.Discard, b.rc, maxDrain)
	if err == io.EOF {
		b.eof = true
		return true
	}
	if err != nil {
		b.err = err
	}
	return false
}

// connReader is what the connection's bufio.Reader reads from. It bounds
// the bytes of a request head, and, while a handler runs with the body
// read, it can watch the connection with a background read that notices
// the client going away (and cancels the request's context).
type connReader struct {
	conn   *conn
	remain int64 // bytes still allowed; < 0: no limit
	// scan, while a head is read by http.ReadRequest, sees what is read.
	scan    *httpsyntax.HeadScanner
	readErr error // the last read of the connection failed (a deadline, a reset)

	mu   sync.Mutex
	cond *sync.Cond
	// The server's disconnect watch starts the background read
	// DisconnectCheck after the handler was armed (disconnectWatch);
	// watchSlot is the connection's place in it, -1 when not in it
	// (under its lock).
	arms      uint64 // how many times a handler was armed: the watch's name for this one
	watchSlot int
	armed     bool            // a handler is running and the body is read
	inRead    bool            // a background read is in progress
	hasByte   bool            // the background read got a byte: the next request's first
	byteBuf   [1]byte         // that byte
	ctx       *requestContext // the running request's: canceled when the client is gone
	aborted   bool            // the background read found the connection gone

	// headDeadline is the read deadline set for a request head (idle,
	// ReadHeaderTimeout), in monoNow's nanoseconds; 0 when the
	// connection has none, or the handler's own. It stays set while the
	// handler runs (handling) until something reads, which clears it
	// first, and the next head's is not set again while the one set is
	// at most 1/32 of the timeout short of it: most handlers never read,
	// and setting and clearing the deadline for every request cost a
	// timer modification each.
	headDeadline int64
	ownDeadline  bool // the handler set one (ResponseController): the next head replaces it
	handling     bool
}

// startScan scans the head br starts with: the bytes br holds now, and
// those read from here until the head ends.
func (cr *connReader) startScan(br *bufio.Reader) {
	s := &cr.conn.head
	s.Reset()
	buf, _ := br.Peek(br.Buffered())
	s.Write(buf)
	if !s.Done() {
		cr.scan = s
	}
}

func (cr *connReader) setReadLimit(n int64) { cr.remain = n }
func (cr *connReader) hitReadLimit() bool   { return cr.remain == 0 }

func (cr *connReader) Read(p []byte) (int, error) {
	if cr.remain == 0 {
		return 0, io.EOF
	}
	if cr.remain > 0 && int64(len(p)) > cr.remain {
		p = p[:cr.remain]
	}
	if len(p) == 0 {
		return 0, nil
	}
	cr.mu.Lock()
	if cr.hasByte {
		p[0] = cr.byteBuf[0]
		cr.hasByte = false
		cr.mu.Unlock()
		cr.count(p[:1])
		return 1, nil
	}
	if cr.aborted {
		cr.mu.Unlock()
		return 0, io.EOF
	}
	cr.handlerReadLocked()
	cr.mu.Unlock()
	n, err := cr.conn.rwc.Read(p)
	cr.count(p[:n])
	if err != nil && err != io.EOF {
		cr.readErr = err
	}
	return n, err
}

// awaitByte waits for the connection's next byte with no buffer but
// byteBuf, and keeps it there for the next Read (hasByte). It returns the
// read's error when no byte came (the client left, the deadline passed).
func (cr *connReader) awaitByte() error {
	cr.mu.Lock()
	switch {
	case cr.hasByte:
		cr.mu.Unlock()
		return nil
	case cr.aborted:
		cr.mu.Unlock()
		return io.EOF
	}
	cr.mu.Unlock()
	n, err := cr.conn.rwc.Read(cr.byteBuf[:])
	if n == 1 {
		cr.mu.Lock()
		cr.hasByte = true
		cr.mu.Unlock()
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	if err != io.EOF {
		cr.readErr = err
	}
	return err
}

func (cr *connReader) count(p []byte) {
	if cr.remain > 0 {
		cr.remain -= int64(len(p))
	}
	if cr.scan != nil {
		if cr.scan.Write(p); cr.scan.Done() {
			cr.scan = nil
		}
	}
}

// beginHead starts reading a request head: the read deadline is d from
// now (none if d is 0), or the one already set for the previous head if
// it is at most d/32 short of that.
func (cr *connReader) beginHead(d time.Duration) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.handling = false
	if cr.ownDeadline {
		cr.clearDeadlineLocked() // the last handler's is not the next head's
	}
	if d <= 0 {
		return
	}
	want := monoNow() + int64(d)
	if cr.headDeadline != 0 && cr.headDeadline <= want && want-cr.headDeadline <= int64(d/32) {
		return
	}
	cr.setHeadDeadlineLocked(want, d)
}

// setHeadDeadline sets a head's read deadline, d from now.
func (cr *connReader) setHeadDeadline(d time.Duration) {
	cr.mu.Lock()
	cr.setHeadDeadlineLocked(monoNow()+int64(d), d)
	cr.mu.Unlock()
}

func (cr *connReader) setHeadDeadlineLocked(at int64, d time.Duration) {
	cr.conn.rwc.SetReadDeadline(time.Now().Add(d))
	cr.headDeadline, cr.ownDeadline = at, false
}

// clearDeadline leaves the connection with no read deadline.
func (cr *connReader) clearDeadline() {
	cr.mu.Lock()
	cr.clearDeadlineLocked()
	cr.mu.Unlock()
}

func (cr *connReader) clearDeadlineLocked() {
	cr.conn.rwc.SetReadDeadline(time.Time{})
	cr.headDeadline, cr.ownDeadline = 0, false
}

// handlerReadLocked clears a head's deadline before a read for the handler
// (its body, the disconnect watch).
func (cr *connReader) handlerReadLocked() {
	if cr.handling && cr.headDeadline != 0 {
		cr.clearDeadlineLocked()
	}
}

// startRequest: the head is read, the handler is about to run with ctx.
// The head's deadline no longer applies: it stays set until something
// reads for the handler, which clears it first (handlerReadLocked).
func (cr *connReader) startRequest(ctx *requestContext) {
	cr.mu.Lock()
	cr.ctx, cr.handling = ctx, true
	cr.mu.Unlock()
}

// arm schedules the background read for when the handler has run
// DisconnectCheck: from now on the handler does not read the connection.
func (cr *connReader) arm() {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.armed || cr.aborted {
		return
	}
	cr.armed = true
	cr.arms++
	cr.conn.srv.disconnects.add(cr, monoNow())
}

// disarm stops the watch: the handler returned (or hijacks the
// connection). A background read in progress is interrupted and waited for.
func (cr *connReader) disarm() {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.ctx = nil
	if !cr.armed {
		return
	}
	cr.armed = false // a background read about to start finds it so
	cr.conn.srv.disconnects.remove(cr)
	if !cr.inRead {
		return
	}
	cr.conn.rwc.SetReadDeadline(aLongTimeAgo)
	for cr.inRead {
		cr.cond.Wait()
	}
	cr.clearDeadlineLocked()
}

var aLongTimeAgo = time.Unix(1, 0)

// backgroundRead runs on a goroutine of its own (disconnectWatch.scan)
// for the handler armed the arm-th time: it reads one byte. A byte is kept
// for the next request (a pipelining client); an error means the client
// is gone, unless disarm interrupted the read.
func (cr *connReader) backgroundRead(arm uint64) {
	cr.mu.Lock()
	if !cr.armed || cr.arms != arm || cr.inRead || cr.hasByte || cr.aborted {
		cr.mu.Unlock()
		return
	}
	cr.handlerReadLocked()
	cr.inRead = true
	cr.mu.Unlock()
	n, err := cr.conn.rwc.Read(cr.byteBuf[:])
	cr.mu.Lock()
	if n == 1 {
		cr.hasByte = true
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// The client closed the connection or it broke: the answer has
		// nobody to go to.
		cr.aborted = true
		if cr.ctx != nil {
			cr.ctx.cancel()
		}
	}
	cr.inRead = false
	cr.cond.Broadcast()
	cr.mu.Unlock()
}

var clockStart = time.Now()

// monoNow reads the monotonic clock, in nanoseconds since the package
// started: for the head deadlines' bookkeeping and the disconnect watch.
// One clock read where time.Now makes two (wall and monotonic).
func monoNow() int64 { return int64(time.Since(clockStart)) }
