package forward

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// An exchange is one request and its response on one connection, on the
// handler's goroutine.
type exchange struct {
	f   *Forwarder
	c   *conn
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context
	now int64 // when the request was written, or about then (monoNow)
	// cred is floodgate's credential to send the request with; its name
	// is empty for none.
	cred authField
	// watched is set while the Forwarder's watchdog watches the
	// connection (for ctx ending, and for the response head's deadline).
	watched bool
	body    *bodyWriter // the goroutine writing a large request body, if any
	buf     *[]byte     // a pooled copy buffer, once needed
	// rc flushes a streamed response; pending is set when a write to w
	// awaits its flush.
	rc      *http.ResponseController
	pending bool
}

// An outcome is how an exchange ended.
type outcome uint8

const (
	served  outcome = iota // answered, through OnError or OnBodyError if need be
	resend                 // to be sent again on a new connection
	refused                // the upstream answered 401 to floodgate's credential; nothing was written to w
)

// run sends the request and copies the response to w, or answers through
// OnError. It returns resend when the request is to be sent again on a
// new connection: only when mayRetry and c turned out to be closed before
// any of the response arrived; refused when the upstream refused the
// credential it carried.
func (x *exchange) run(mayRetry bool) outcome {
	c := x.c
	x.f.watch.add(x.ctx, c, x.now)
	x.watched = true
	werr, lerr := x.send()
	if lerr != nil {
		x.fail(lerr)
		return served
	}
	if werr != nil && mayRetry && x.ctx.Err() == nil {
		x.close()
		return resend
	}
	none, err := x.readHead()
	if err != nil {
		if res, ok := x.bodyResult(); ok && (res.werr != nil || res.rerr != nil) {
			err = cmpOr(res.rerr, res.werr)
		} else if werr != nil {
			err = werr // no response came after the failed write either
		} else if none && mayRetry && x.ctx.Err() == nil && !isTimeout(err) {
			x.close()
			return resend
		}
		x.fail(err)
		return served
	}
	h := &c.head
	fr, err := h.framing(x.r.Method)
	if err != nil {
		x.fail(err)
		return served
	}
	if h.status == http.StatusUnauthorized && x.cred.name != "" {
		x.discard(&fr, werr)
		return refused
	}
	if !x.writeHeaderLines(&fr) {
		x.copyHeader(&fr)
		x.w.WriteHeader(h.status)
	}
	if fr.stream {
		// The header goes out at once, as httputil.ReverseProxy sends it
		// (so the server neither sniffs a Content-Type nor computes a
		// Content-Length for a short stream).
		x.rc = http.NewResponseController(x.w)
		x.rc.Flush()
	}
	switch {
	case fr.chunked:
		err = x.copyChunked()
	case fr.length != 0:
		err = x.copyBody(fr.length)
	}
	if err != nil {
		var cw clientWriteError
		if fn := x.f.o.OnBodyError; fn != nil && !errors.As(err, &cw) {
			if cerr := x.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				err = fmt.Errorf("forward: %w (after %v)", cerr, err)
			}
			fn(x.w, x.r, err)
		}
		x.abort()
		return served
	}
	x.done(!fr.close && werr == nil)
	return served
}

// discard ends an exchange whose response is not passed on (a refusal of
// floodgate's credential): a body that came whole with the head is
// skipped and the connection pooled, as after any response; otherwise the
// connection is closed rather than read on.
func (x *exchange) discard(fr *framing, werr error) {
	br := x.c.br
	if fr.chunked || fr.length < 0 || fr.length > int64(br.Buffered()) {
		x.close()
		return
	}
	br.Discard(int(fr.length))
	x.done(!fr.close && werr == nil)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// send writes the request head and a small body. A larger body, or one of
// unknown length, is left to a goroutine of its own (x.body). werr is a
// failure to write to the upstream; lerr a problem with the request
// itself or with reading its body from the client.
func (x *exchange) send() (werr, lerr error) {
	r, c := x.r, x.c
	n := r.ContentLength
	if r.Body == nil || r.Body == http.NoBody {
		n = 0
	}
	if err := x.writeHead(n); err != nil {
		return nil, err
	}
	switch {
	case n == 0:
		return c.bw.Flush(), nil
	case n > 0 && n <= syncBodyMax:
		werr, lerr = copyFixed(c.bw, r.Body, n)
		x.now = monoNow() // the client may have been slow to send it
		return werr, lerr
	}
	if err := c.bw.Flush(); err != nil {
		return err, nil
	}
	c.headDeadline.Store(-1) // until the body is written
	x.body = &bodyWriter{done: make(chan bodyResult, 1)}
	go x.body.run(c, r.Body, n, x.f.o.ResponseHeaderTimeout)
	return nil, nil
}

// writeHead writes the request line and header fields to the
// connection's buffer, n being the body's length (-1: unknown, chunked).
func (x *exchange) writeHead(n int64) error {
	r, bw := x.r, x.c.bw
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	x.f.writeTarget(bw, r.URL)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(x.f.host)
	bw.WriteString("\r\n")
	conn := r.Header["Connection"]
	drop := x.f.drop
	for k, vv := range r.Header {
		if skipRequestField(k) || (len(conn) > 0 && listed(conn, k)) || dropped(drop, k) {
			continue
		}
		if !validName(k) {
			return fmt.Errorf("forward: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !validValue(v) {
				return fmt.Errorf("forward: invalid header field value for %q", k)
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	// Floodgate's credential takes the place of a field of the same name,
	// even one the forwarding writes.
	cred := x.cred.name
	if cred != "" {
		if !validValue(x.cred.value) {
			return fmt.Errorf("forward: invalid header field value for %q", cred)
		}
		bw.WriteString(cred)
		bw.WriteString(": ")
		bw.WriteString(x.cred.value)
		bw.WriteString("\r\n")
	}
	// httputil.ReverseProxy sends the client's User-Agent, or none.
	if ua := r.Header["User-Agent"]; len(ua) > 0 && ua[0] != "" && (len(conn) == 0 || !listed(conn, "User-Agent")) && cred != "User-Agent" {
		if !validValue(ua[0]) {
			return errors.New(`forward: invalid header field value for "User-Agent"`)
		}
		bw.WriteString("User-Agent: ")
		bw.WriteString(ua[0])
		bw.WriteString("\r\n")
	}
	if te := r.Header["Te"]; len(te) > 0 && hasToken(te, "trailers") {
		bw.WriteString("Te: trailers\r\n")
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && cred != "X-Forwarded-For" {
		bw.WriteString("X-Forwarded-For: ")
		for _, v := range r.Header["X-Forwarded-For"] {
			if !validValue(v) {
				return errors.New(`forward: invalid header field value for "X-Forwarded-For"`)
			}
			bw.WriteString(v)
			bw.WriteString(", ")
		}
		bw.WriteString(ip)
		bw.WriteString("\r\n")
	}
	if !validValue(r.Host) {
		return errors.New("forward: invalid Host")
	}
	if cred != "X-Forwarded-Host" {
		bw.WriteString("X-Forwarded-Host: ")
		bw.WriteString(r.Host)
		bw.WriteString("\r\n")
	}
	if cred != "X-Forwarded-Proto" {
		bw.WriteString("X-Forwarded-Proto: ")
		bw.WriteString(forwardedProto(r))
		bw.WriteString("\r\n")
	}
	switch {
	case n > 0:
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, 10))
		bw.WriteString("\r\n")
	case n < 0:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch:
		bw.WriteString("Content-Length: 0\r\n")
	}
	_, err := bw.WriteString("\r\n")
	return err
}

// skipRequestField reports whether the request field k is not copied as
// it is: hop-by-hop fields, the forwarding fields (set anew), and those
// written from the request's own state.
func skipRequestField(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto",
		"Host", "User-Agent", "Content-Length":
		return true
	}
	return hopByHop(k)
}

// writeTarget writes the request target: the target's path joined with
// the request's, and the request's query, cleaned as
// httputil.ReverseProxy cleans it.
func (f *Forwarder) writeTarget(bw *bufio.Writer, u *url.URL) {
	var p string
	if f.basePath == "" {
		p = u.EscapedPath()
	} else {
		t := url.URL{Path: joinPath(f.basePath, u.Path)}
		if u.RawPath != "" {
			t.RawPath = joinPath(f.baseRaw, u.RawPath)
		}
		p = t.EscapedPath()
	}
	if p == "" {
		p = "/"
	}
	bw.WriteString(p)
	if q := cleanQuery(u.RawQuery); u.ForceQuery || q != "" {
		bw.WriteByte('?')
		bw.WriteString(q)
	}
}

// maxQueryParams is net/url's default bound on query parameters.
const maxQueryParams = 10000

// cleanQuery re-encodes a query that net/url would not parse as it is
// (a ';', a bad escape, too many parameters), as httputil.ReverseProxy
// does with Rewrite, so that what the upstream sees is what was checked.
func cleanQuery(s string) string {
	reencode := func(s string) string {
		v, _ := url.ParseQuery(s)
		return v.Encode()
	}
	if strings.Count(s, "&")+1 > maxQueryParams {
		return reencode(s)
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// copyFixed writes the n bytes of body to bw and flushes it.
func copyFixed(bw *bufio.Writer, body io.Reader, n int64) (werr, rerr error) {
	for n > 0 {
		if bw.Available() == 0 {
			if err := bw.Flush(); err != nil {
				return err, nil
			}
		}
		p := bw.AvailableBuffer()[:min(int64(bw.Available()), n)]
		k, err := body.Read(p)
		bw.Write(p[:k])
		n -= int64(k)
		if err == io.EOF && n > 0 {
			return nil, fmt.Errorf("forward: request body %d bytes shorter than its Content-Length", n)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("forward: read request body: %w", err)
		}
	}
	return bw.Flush(), nil
}

// copyChunked writes body to bw in chunks, flushing each.
func copyChunked(bw *bufio.Writer, body io.Reader) (werr, rerr error) {
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	buf := *bp
	for {
		k, err := body.Read(buf)
		if k > 0 {
			bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(k), 16))
			bw.WriteString("\r\n")
			bw.Write(buf[:k])
			bw.WriteString("\r\n")
			if werr := bw.Flush(); werr != nil {
				return werr, nil
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("forward: read request body: %w", err)
		}
	}
	bw.WriteString("0\r\n\r\n")
	return bw.Flush(), nil
}

// A bodyWriter writes a request body while the handler's goroutine reads
// the response, so that an upstream answering before it has read the
// whole body is not deadlocked against it.
type bodyWriter struct {
	done chan bodyResult
}

type bodyResult struct{ werr, rerr error }

// bodyWriterGrace is how long a finished response waits for its request
// body's goroutine before the connection is given up on rather than
// pooled (net/http's maxWriteWaitBeforeConnReuse).
const bodyWriterGrace = 50 * time.Millisecond

func (b *bodyWriter) run(c *conn, body io.Reader, n int64, timeout time.Duration) {
	var res bodyResult
	if n > 0 {
		res.werr, res.rerr = copyFixed(c.bw, body, n)
	} else {
		res.werr, res.rerr = copyChunked(c.bw, body)
	}
	if res.werr == nil && res.rerr == nil {
		// The response-header timeout runs from the request's end,
		// unless the head has come already.
		c.headDeadline.CompareAndSwap(-1, monoNow()+int64(timeout))
	}
	b.done <- res
	if res.rerr != nil {
		// The request cannot be completed: end the wait for a response.
		c.setPastDeadline()
	}
}

// bodyResult returns the body writer's result if it has finished.
func (x *exchange) bodyResult() (bodyResult, bool) {
	if x.body == nil {
		return bodyResult{}, false
	}
	select {
	case res := <-x.body.done:
		x.body.done <- res // keep it for done
		return res, true
	default:
		return bodyResult{}, false
	}
}

// readHead reads the response head into x.c.head, passing informational
// responses on to the client. none reports that the upstream sent nothing
// before err.
func (x *exchange) readHead() (none bool, err error) {
	c := x.c
	if x.body == nil {
		c.headDeadline.Store(x.now + int64(x.f.o.ResponseHeaderTimeout))
	}
	defer func() {
		c.headDeadline.Store(0)
		if err != nil {
			// A timeout is the watchdog's doing: for the context, or for
			// the head's deadline.
			if cerr := x.ctx.Err(); cerr != nil {
				err = fmt.Errorf("forward: awaiting response: %w", cerr)
			} else if isTimeout(err) {
				err = errHeaderTimeout
			} else if err == io.EOF {
				err = fmt.Errorf("forward: upstream closed the connection before answering: %w", io.EOF)
			} else if !errors.Is(err, errMalformed) && !errors.Is(err, errHeaderTooLarge) {
				err = fmt.Errorf("forward: read response: %w", err)
			}
		}
	}()
	// Yield once before the first read: under load the other handlers
	// run while the upstream answers, and the read then finds the
	// response rather than failing with EAGAIN and parking on the
	// netpoller (measured: one read system call fewer a request, and
	// about 10% less CPU a request behind wrk's 32 connections).
	runtime.Gosched()
	if _, err := c.br.Peek(1); err != nil {
		return true, err
	}
	// What came must begin as "HTTP/" does: bytes of another kind (an
	// HTTP/0.9 body, another protocol) are no HTTP/1.x answer, whether or
	// not a line end or the connection's end follows. Only what is
	// buffered is looked at: no read waits for it.
	if p, _ := c.br.Peek(min(c.br.Buffered(), len("HTTP/"))); !strings.HasPrefix("HTTP/", string(p)) {
		return false, fmt.Errorf("%w: not HTTP/1.x: %q", errMalformed, quote(p))
	}
	for n := 0; ; n++ {
		if err := c.head.readResponse(c.br); err != nil {
			return false, err
		}
		switch s := c.head.status; {
		case s == http.StatusSwitchingProtocols:
			return false, fmt.Errorf("%w: 101 Switching Protocols to a request that asked for no upgrade", errMalformed)
		case s >= 200:
			return false, nil
		case n == max1xx:
			return false, fmt.Errorf("%w: more than %d informational responses", errMalformed, max1xx)
		}
		x.inform()
	}
}

// inform passes an informational (1xx) response on to the client. Its
// fields are sent with the fields set so far and then removed again (RFC
// 8297: a 103's fields do not apply to the final response).
func (x *exchange) inform() {
	h := &x.c.head
	dst := x.w.Header()
	added := map[string]bool{} // 1xx responses are rare: a map keeps this linear
	for _, f := range h.fields {
		name := string(h.name(f))
		if hopByHop(name) || dropped(x.f.strip, name) {
			continue
		}
		if _, ok := dst[name]; ok && !added[name] {
			continue
		}
		added[name] = true
		dst[name] = append(dst[name], string(h.value(f)))
	}
	x.w.WriteHeader(h.status)
	for k := range added {
		delete(dst, k)
	}
}

// A lineWriter takes a response's header as field lines: floodgate's
// server (internal/h1server) does, and the gateway's writer passes them
// on when nothing needs the header as a map. Relaying the upstream's
// fields so spares a header map that the server would sort and write
// out again. WriteHeaderLines sends Header()'s fields, then lines
// ("Name: value\r\n" each), then Content-Length when contentLength is not
// -1; it reports false, having done nothing, when it will not (a status
// without a body, lines it finds malformed...): the caller then fills
// Header() and calls WriteHeader.
type lineWriter interface {
	WriteHeaderLines(code int, lines []byte, contentLength int64) bool
}

// writeHeaderLines passes the response head on to x.w as field lines,
// when x.w takes them, and reports whether it did. The lines are those
// copyHeader would put in the map, in the order received.
func (x *exchange) writeHeaderLines(fr *framing) bool {
	lw, ok := x.w.(lineWriter)
	if !ok || fr.connList {
		return false // Connection lists fields to drop: rare, left to copyHeader
	}
	c := x.c
	h := &c.head
	if s := h.status; s < 200 || s == http.StatusNoContent || s == http.StatusNotModified {
		return false
	}
	b := c.lines[:0]
	for _, f := range h.fields {
		name := h.name(f)
		switch {
		case hopByHop(name):
			if string(name) == "Trailer" && fr.chunked {
				return false // trailers: left to copyHeader
			}
			continue
		case string(name) == "Content-Length":
			continue // fr.declared
		case dropped(x.f.strip, name):
			continue
		}
		b = append(b, name...)
		b = append(b, ": "...)
		b = append(b, h.value(f)...)
		b = append(b, "\r\n"...)
	}
	if cap(b) <= maxCachedBlock {
		c.lines = b
	}
	return lw.WriteHeaderLines(h.status, b, fr.declared)
}

// maxCachedBlock bounds the response heads a connection keeps for reuse.
const maxCachedBlock = 4 << 10

// copyHeader adds the response's end-to-end fields to w's header: one
// string holds all the names and values, one slice all the values.
func (x *exchange) copyHeader(fr *framing) {
	c := x.c
	h := &c.head
	dst := x.w.Header()
	// An upstream tends to send the same head again (within the second
	// of its Date): the string is then the one made last time.
	block := c.lastBlock
	if string(h.buf) != block {
		block = string(h.buf)
		if len(block) <= maxCachedBlock {
			c.lastBlock = block
		}
	}
	var connTokens map[string]struct{}
	if fr.connList {
		connTokens = h.connectionTokens()
	}
	vals := make([]string, len(h.fields))
	j := 0
	for _, f := range h.fields {
		name := block[f.k0:f.k1]
		v := block[f.v0:f.v1]
		switch {
		case hopByHop(name):
			if name == "Trailer" && fr.chunked {
				dst["Trailer"] = append(dst["Trailer"], v)
			}
			continue
		case connTokens != nil && inTokens(connTokens, name), dropped(x.f.strip, name):
			continue
		case name == "Content-Length" && (fr.chunked || len(dst["Content-Length"]) > 0):
			// Dropped under chunked; framing has checked that repeated
			// values agree, and one is passed on.
			continue
		}
		if old, ok := dst[name]; ok {
			dst[name] = append(old, v)
			continue
		}
		vals[j] = v
		dst[name] = vals[j : j+1 : j+1]
		j++
	}
}

// connectionTokens returns the field names h's Connection fields list,
// lower case.
func (h *head) connectionTokens() map[string]struct{} {
	m := map[string]struct{}{}
	for _, f := range h.fields {
		if string(h.name(f)) == "Connection" {
			for t := range tokens(h.value(f)) {
				m[strings.ToLower(string(t))] = struct{}{}
			}
		}
	}
	return m
}

// inTokens reports whether the canonical field name is in m.
func inTokens(m map[string]struct{}, name string) bool {
	var buf [64]byte
	if len(name) > len(buf) {
		_, ok := m[strings.ToLower(name)]
		return ok
	}
	b := buf[:len(name)]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	_, ok := m[string(b)]
	return ok
}

// beforeRead is called before a read that may wait for the upstream:
// what was written to the client is flushed, whatever the response's
// framing, so that a client sees its answer start (the head and what
// came) while an upstream pauses, as nginx sends what it has. A response
// that arrives whole with its head is read without waiting, and flushed
// only at its end.
func (x *exchange) beforeRead() {
	if x.pending {
		if x.rc == nil {
			x.rc = http.NewResponseController(x.w)
		}
		x.rc.Flush()
		x.pending = false
	}
}

func (x *exchange) write(p []byte) error {
	_, err := x.w.Write(p)
	x.pending = true
	if err != nil {
		return clientWriteError{err}
	}
	return nil
}

// A clientWriteError is a failure to write the response to the client:
// the client's doing, not the upstream's.
type clientWriteError struct{ err error }

func (e clientWriteError) Error() string { return e.err.Error() }
func (e clientWriteError) Unwrap() error { return e.err }

// copyBody copies n bytes of body (n < 0: up to the end of the
// connection) to the client.
func (x *exchange) copyBody(n int64) error {
	br := x.c.br
	for n != 0 {
		b := br.Buffered()
		if b == 0 {
			x.beforeRead()
			if n < 0 || n >= int64(br.Size()) {
				// Large: read past the connection's buffer.
				buf := x.buffer()
				if n > 0 && int64(len(buf)) > n {
					buf = buf[:int(n)]
				}
				k, err := br.Read(buf)
				if k > 0 {
					if err := x.write(buf[:k]); err != nil {
						return err
					}
					if n > 0 {
						n -= int64(k)
					}
				}
				if err != nil {
					return eofOK(err, n < 0)
				}
				continue
			}
			if _, err := br.Peek(1); err != nil {
				return eofOK(err, false)
			}
			b = br.Buffered()
		}
		if n > 0 && int64(b) > n {
			b = int(n)
		}
		p, _ := br.Peek(b)
		if err := x.write(p); err != nil {
			return err
		}
		br.Discard(b)
		if n > 0 {
			n -= int64(b)
		}
	}
	return nil
}

// eofOK returns nil for io.EOF when the body ends with the connection,
// io.ErrUnexpectedEOF for it otherwise, and other errors as they are.
func eofOK(err error, ok bool) error {
	if err == io.EOF {
		if ok {
			return nil
		}
		return io.ErrUnexpectedEOF
	}
	return err
}

// Bounds of the chunked coding, as net/http's.
const (
	maxChunkLine = 4096
	// maxChunkExcess bounds what chunk lines may add beyond 16 bytes per
	// chunk plus twice the chunk's data (tiny chunks with long extensions).
	maxChunkExcess = 16 << 10
)

var errChunked = fmt.Errorf("%w: bad chunked encoding", errMalformed)

// copyChunked copies a chunked body to the client, and its trailer
// fields to w's header as trailers.
func (x *exchange) copyChunked() error {
	br := x.c.br
	var excess int64
	for {
		if !lineBuffered(br) {
			x.beforeRead()
		}
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return errChunked
			}
			return eofOK(err, false)
		}
		size, ok := parseChunkLine(line)
		if !ok {
			return errChunked
		}
		if excess += int64(len(line)) - 16 - 2*min(size, maxChunkExcess); excess < 0 {
			excess = 0
		} else if excess > maxChunkExcess {
			return errChunked
		}
		if size == 0 {
			break
		}
		if err := x.copyBody(size); err != nil {
			return err
		}
		if br.Buffered() < 2 {
			x.beforeRead()
		}
		p, err := br.Peek(2)
		if err != nil {
			return eofOK(err, false)
		}
		if p[0] != '\r' || p[1] != '\n' {
			return errChunked
		}
		br.Discard(2)
	}
	// The trailer section, usually empty.
	if br.Buffered() < 2 {
		x.beforeRead()
	}
	if p, err := br.Peek(2); err == nil && p[0] == '\r' && p[1] == '\n' {
		br.Discard(2)
		return nil
	}
	x.beforeRead()
	h := &x.c.head
	if err := h.readTrailer(br); err != nil {
		return err
	}
	dst := x.w.Header()
	for _, f := range h.fields {
		if dropped(x.f.strip, h.name(f)) {
			continue
		}
		k := http.TrailerPrefix + string(h.name(f))
		dst[k] = append(dst[k], string(h.value(f)))
	}
	return nil
}

// lineBuffered reports whether br holds a whole line.
func lineBuffered(br *bufio.Reader) bool {
	p, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(p, '\n') >= 0
}

// parseChunkLine parses "size [; extensions] CRLF" (RFC 9112 §7.1): a bare
// LF or a CR elsewhere is refused, as net/http refuses them.
func parseChunkLine(line []byte) (int64, bool) {
	n := len(line)
	if n < 3 || n > maxChunkLine || line[n-2] != '\r' || bytes.IndexByte(line[:n-2], '\r') >= 0 {
		return 0, false
	}
	line = line[:n-2]
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var size uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		size = size<<4 | uint64(c)
	}
	if size > math.MaxInt64 {
		return 0, false
	}
	return int64(size), true
}

// buffer returns the exchange's pooled copy buffer.
func (x *exchange) buffer() []byte {
	if x.buf == nil {
		x.buf = buffers.Get().(*[]byte)
	}
	return *x.buf
}

// fail answers through OnError, nothing having been written to w yet.
func (x *exchange) fail(err error) {
	x.close()
	if cerr := x.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("forward: %w (after %v)", cerr, err)
	}
	x.f.o.OnError(x.w, x.r, err)
}

// abort ends a response whose header has been sent and whose body cannot
// be completed: as httputil.ReverseProxy does, by panicking with
// http.ErrAbortHandler under an http.Server (which then closes the
// client's connection without completing the response).
func (x *exchange) abort() {
	x.close()
	if x.r.Context().Value(http.ServerContextKey) != nil {
		panic(http.ErrAbortHandler)
	}
}

// close ends the exchange and closes the connection.
func (x *exchange) close() {
	x.unwatch()
	x.c.nc.Close()
	x.release()
}

// unwatch ends the watchdog's watch and reports whether it poisoned the
// connection.
func (x *exchange) unwatch() (poisoned bool) {
	if !x.watched {
		return false
	}
	x.watched = false
	return x.f.watch.remove(x.c)
}

// done ends the exchange, pooling the connection when it can carry
// another request: the response was read to its end, nothing more
// arrived, the context's watch did not fire and a body writer finished.
func (x *exchange) done(reusable bool) {
	if x.unwatch() {
		reusable = false
	}
	if x.body != nil {
		res, ok := x.bodyResult()
		if !ok && reusable {
			// The body's goroutine may have written it all and not yet
			// said so; or it may still be writing to an upstream that
			// answered early. Wait a little, as net/http does.
			t := time.NewTimer(bodyWriterGrace)
			select {
			case res, ok = <-x.body.done:
			case <-t.C:
			}
			t.Stop()
		}
		reusable = reusable && ok && res.werr == nil && res.rerr == nil
	}
	x.release()
	// Nothing may follow a complete response: bytes already buffered are
	// an upstream's extra response (a body on a HEAD, a short
	// Content-Length), which the next client would get. Bytes still in
	// the socket are found by the peek before the connection's next use
	// (pool.get), which is the check that matters: one system call per
	// reuse rather than two.
	switch {
	case reusable && x.c.br.Buffered() > 0:
		if fn := x.f.o.OnUnsolicited; fn != nil {
			fn()
		}
		x.c.nc.Close()
	case reusable && x.f.o.Reuse != ReuseNone && (x.f.o.Reuse == ReuseShared || x.c.owner != nil):
		x.f.pool.put(x.c)
	default:
		x.c.nc.Close()
	}
}

func (x *exchange) release() {
	if x.buf != nil {
		buffers.Put(x.buf)
		x.buf = nil
	}
}
