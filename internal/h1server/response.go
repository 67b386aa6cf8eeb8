package h1server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// sniffLen is how much of a body http.DetectContentType looks at.
const sniffLen = 512

// bufferLimit is how much of a body is held back before the header is
// sent: a response the handler finishes within it goes out with a
// Content-Length, in one write.
const bufferLimit = 8 << 10

// response is the handler's http.ResponseWriter. One per connection,
// reset for every request.
type response struct {
	conn   *conn
	req    *http.Request
	header http.Header  // the handler's
	body   *requestBody // nil: the request has no body
	// fields is the handler's header as it was at WriteHeader, rendered
	// (net/http copies it there: what the handler does afterwards to the
	// map, or to the slices in it, is not sent), and sent the facts the
	// server takes from it.
	fields []byte
	sent   sentHeader
	// declared are the Trailer field's values at WriteHeader: the
	// trailers announced then are the ones sent at the end.
	declared []string
	// lines are field lines the handler gave WriteHeaderLines, sent after
	// fields; linesLength: so was the Content-Length (contentLength).
	lines       []byte
	linesLength bool

	// cmu serializes 1xx answers, which may come from goroutines of the
	// handler's (a body read sends 100 Continue; ReverseProxy relays an
	// upstream's 1xx from its transport), with the header's commit.
	cmu             sync.Mutex
	continuePending bool // the client waits for 100 Continue, not sent yet

	status        int
	wroteHeader   bool  // the final status is set (WriteHeader or the first Write)
	committed     bool  // the status line and header are written
	chunked       bool  // the body is sent chunked
	noBody        bool  // HEAD, 1xx, 204, 304: body bytes are not sent
	contentLength int64 // declared by the handler; -1: none
	written       int64 // body bytes the handler wrote
	buf           []byte
	keys          []string // header names, sorted, reused

	closeAfter bool // the connection ends after this response
	failed     bool // a write to the connection failed
	hijacked   bool
	fullDuplex bool
}

// sentHeader is what the server reads of the handler's header at
// WriteHeader.
type sentHeader struct {
	conn0, conn1 int    // the Connection field lines in fields, left out when the server writes its own
	close        bool   // Connection lists close
	te           string // the first Transfer-Encoding value
	encoded      bool   // a Content-Encoding is set: no Content-Type is sniffed
	typed        bool   // a Content-Type is set (even empty): none is sniffed
	dated        bool   // a Date is set
	trailers     bool   // trailer fields are declared: the body goes chunked
}

func (w *response) reset(req *http.Request) {
	if w.header == nil {
		w.header = make(http.Header, 16) // at the first request, not the connection's accept
	}
	w.req, w.body, w.continuePending = req, nil, false
	w.lines, w.linesLength = w.lines[:0], false
	w.status, w.wroteHeader, w.committed, w.chunked, w.noBody = http.StatusOK, false, false, false, false
	w.contentLength, w.written, w.buf = -1, 0, w.buf[:0]
	w.closeAfter, w.failed, w.hijacked, w.fullDuplex = closesAfter(req), false, false, false
}

// closesAfter reports whether the connection ends after the answer to
// req, as net/http's server decides it: on a "close" token in the first
// Connection field, or the parser's Close, for HTTP/1.1; for HTTP/1.0
// unless that field holds a "keep-alive" token (and no "close"). Tokens
// are found as net/http's server finds them (connectionHasToken), not by
// splitting on commas alone as the parser does for req.Close.
func closesAfter(req *http.Request) bool {
	var conn string
	if v := req.Header["Connection"]; len(v) > 0 {
		conn = v[0]
	}
	if connectionHasToken(conn, "close") {
		return true
	}
	if req.ProtoMajor == 1 && req.ProtoMinor == 0 {
		return !connectionHasToken(conn, "keep-alive")
	}
	return req.Close
}

// connectionHasToken is net/http's hasToken: token (lower case) occurs in
// v, case-insensitively, bounded by the start or end of v, a space, a
// comma or a tab.
func connectionHasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	boundary := func(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
	for sp := 0; sp+len(token) <= len(v); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !boundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !boundary(v[end]) {
			continue
		}
		if httpsyntax.EqualFoldASCII(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

// release lets go of what the request referenced, once it is answered:
// an idle connection keeps no request, header or body alive, and no
// oversized map or slice.
func (w *response) release() {
	w.req, w.body = nil, nil
	w.fields, w.lines = w.fields[:0], w.lines[:0]
	clear(w.declared)
	w.declared = w.declared[:0]
	if cap(w.fields) > 16<<10 {
		w.fields = nil
	}
	if cap(w.lines) > 16<<10 {
		w.lines = nil
	}
	if len(w.header) > 64 {
		w.header = make(http.Header, 16)
	} else {
		clear(w.header)
	}
	clear(w.keys[:cap(w.keys)])
	if cap(w.keys) > 64 {
		w.keys = nil
	}
}

// Header returns the handler's header. Changes made after WriteHeader
// are not sent (but trailers are read from it at the end), as with
// net/http: WriteHeader renders the header as it then is.
func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	// The key is canonical already: Get would canonicalize it again.
	if vv := w.header["Content-Length"]; len(vv) > 0 && vv[0] != "" {
		cl := vv[0]
		v, err := strconv.ParseInt(cl, 10, 64)
		if err == nil && v >= 0 {
			w.contentLength = v
		} else {
			w.conn.srv.logf("h1server: invalid Content-Length of %q", cl)
			delete(w.header, "Content-Length")
		}
	}
	w.fields, w.sent = w.appendHeaderFields(w.fields[:0], w.header, code)
	w.declared = append(w.declared[:0], w.header["Trailer"]...)
}

// WriteHeaderLines is WriteHeader for a handler that holds the
// response's fields as lines, "Name: value\r\n" each (a proxy relaying an
// upstream's answer does): they are sent as they are, after Header()'s
// fields, and contentLength, unless it is -1, as the Content-Length. It
// spares the handler a header map the server would sort and write out
// again. The lines are copied. It does nothing and reports false when the
// header is written already, for a status without a body (1xx, 204, 304),
// when Header() holds Content-Length or Transfer-Encoding, and when a line
// is not a field line the server may send as it is: a name that is not a
// token, a value with a control character, or a field the server frames
// the body with or that is hop-by-hop (Connection, Content-Length,
// Transfer-Encoding, Trailer, Keep-Alive, Upgrade...). The caller then
// uses Header() and WriteHeader.
func (w *response) WriteHeaderLines(code int, lines []byte, contentLength int64) bool {
	if w.hijacked || w.wroteHeader || code < 200 || code > 999 || !bodyAllowedForStatus(code) {
		return false
	}
	if _, ok := w.header["Content-Length"]; ok {
		return false
	}
	if _, ok := w.header["Transfer-Encoding"]; ok {
		return false
	}
	facts, ok := scanFieldLines(lines)
	if !ok {
		return false
	}
	w.lines = append(w.lines[:0], lines...)
	w.WriteHeader(code)
	w.sent.dated = w.sent.dated || facts.dated
	w.sent.typed = w.sent.typed || facts.typed
	w.sent.encoded = w.sent.encoded || facts.encoded
	if contentLength >= 0 {
		w.contentLength, w.linesLength = contentLength, true
	}
	return true
}

// scanFieldLines checks lines for WriteHeaderLines and notes the fields
// the server looks for in a header.
func scanFieldLines(lines []byte) (sentHeader, bool) {
	var facts sentHeader
	for len(lines) > 0 {
		colon := bytes.IndexByte(lines, ':')
		end := bytes.IndexByte(lines, '\r')
		if colon < 0 || end < colon+1 || end+1 == len(lines) || lines[end+1] != '\n' || lines[colon+1] != ' ' {
			return facts, false
		}
		name, value := lines[:colon], lines[colon+2:end]
		if !validFieldName(name) || !validFieldValue(value) {
			return facts, false
		}
		switch {
		case asciiEqualFold(name, "Date"):
			facts.dated = true
		case asciiEqualFold(name, "Content-Type"):
			facts.typed = true
		case asciiEqualFold(name, "Content-Encoding"):
			facts.encoded = true
		case framingOrHopField(name):
			return facts, false
		}
		lines = lines[end+2:]
	}
	return facts, true
}

// framingOrHopField reports the fields WriteHeaderLines refuses: those the
// server frames the body with, and the hop-by-hop ones (RFC 9110 §7.6.1).
func framingOrHopField(name []byte) bool {
	for _, k := range [...]string{"Content-Length", "Transfer-Encoding", "Connection", "Trailer",
		"Keep-Alive", "Proxy-Connection", "Te", "Upgrade", "Proxy-Authenticate", "Proxy-Authorization"} {
		if asciiEqualFold(name, k) {
			return true
		}
	}
	return false
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// writeInformational sends a 1xx answer (103 Early Hints, say) at once,
// with the header as it stands, to HTTP/1.1 clients. It may be called from
// a goroutine of the handler's (ReverseProxy relays an upstream's 1xx from
// its transport's), hence cmu; a write error shows on the final answer.
func (w *response) writeInformational(code int) {
	w.cmu.Lock()
	defer w.cmu.Unlock()
	if code == http.StatusContinue {
		if !w.continuePending {
			return // sent already, or not asked for
		}
		w.continuePending = false
	}
	if w.committed || w.hijacked || w.conn.bw == nil || !w.req.ProtoAtLeast(1, 1) {
		return
	}
	bw := w.conn.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(statusLine(code))
	fields, _ := w.appendHeaderFields(bw.AvailableBuffer(), w.header, code)
	bw.Write(fields)
	bw.WriteString("\r\n")
	bw.Flush()
}

// sendContinue sends 100 Continue if the client waits for it: the
// handler is reading the body (on whatever goroutine).
func (w *response) sendContinue() error {
	w.cmu.Lock()
	defer w.cmu.Unlock()
	if !w.continuePending {
		return nil
	}
	w.continuePending = false
	bw := w.conn.bw
	bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	return bw.Flush()
}

func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowedForStatus(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.committed {
		if len(w.buf)+len(p) <= bufferLimit {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		w.commit(false, p)
	}
	return len(p), w.writeBody(p)
}

func (w *response) WriteString(s string) (int, error) {
	if !w.committed && w.wroteHeader && len(w.buf)+len(s) <= bufferLimit && bodyAllowedForStatus(w.status) &&
		(w.contentLength < 0 || w.written+int64(len(s)) <= w.contentLength) {
		w.buf = append(w.buf, s...)
		w.written += int64(len(s))
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// writeBody sends body bytes once the header is out.
func (w *response) writeBody(p []byte) error {
	if w.failed {
		return errConnFailed
	}
	if w.noBody || len(p) == 0 {
		return nil
	}
	bw := w.conn.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
		bw.Write(p)
		bw.WriteString("\r\n")
	} else {
		bw.Write(p)
	}
	if err := bwErr(bw); err != nil {
		w.failed = true
		return err
	}
	return nil
}

var errConnFailed = fmt.Errorf("h1server: connection failed")

// bwErr returns the writer's sticky error, if any (bufio.Writer keeps it
// and returns it from every later call).
func bwErr(bw *bufio.Writer) error {
	_, err := bw.Write(nil)
	return err
}

func (w *response) Flush() { _ = w.FlushError() }

// FlushError sends what the handler has written so far (the header, then
// a chunked or close-delimited body).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false, nil)
	}
	if w.failed {
		return errConnFailed
	}
	if err := w.conn.bw.Flush(); err != nil {
		w.failed = true
		return err
	}
	return nil
}

// Hijack hands the connection over, as net/http's does.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	c := w.conn
	if w.wroteHeader && !w.committed {
		// WriteHeader(101) then Hijack: the 101 goes out first.
		w.commit(false, nil)
	}
	if w.committed {
		if err := c.bw.Flush(); err != nil {
			return nil, nil, err
		}
	}
	w.cmu.Lock()
	w.continuePending = false
	w.hijacked = true // under cmu: a 1xx from another goroutine sees it
	w.cmu.Unlock()
	w.body.shut() // its bytes are the caller's now
	c.r.disarm()
	if c.r.hasByte {
		// The background read took the next request's first byte: put
		// it into the reader the caller gets.
		if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
			return nil, nil, fmt.Errorf("h1server: reading buffered byte: %w", err)
		}
	}
	c.state.Store(stateHijacked)
	c.srv.trackConn(c, false) // Shutdown and Close leave it to its new owner
	c.rwc.SetWriteDeadline(time.Time{})
	c.r.clearDeadline()
	rw := bufio.NewReadWriter(c.br, c.bw)
	c.br, c.bw = nil, nil // the caller's now; not returned to the pools
	return c.rwc, rw, nil
}

// SetReadDeadline and SetWriteDeadline serve http.ResponseController.
func (w *response) SetReadDeadline(t time.Time) error {
	r := w.conn.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headDeadline, r.ownDeadline = 0, !t.IsZero()
	return w.conn.rwc.SetReadDeadline(t)
}
func (w *response) SetWriteDeadline(t time.Time) error { return w.conn.rwc.SetWriteDeadline(t) }

// EnableFullDuplex serves http.ResponseController: the request body is
// left alone when the header is sent (it is otherwise read to its end
// first, as net/http does).
func (w *response) EnableFullDuplex() error {
	w.fullDuplex = true
	return nil
}

// commit writes the status line and header into the connection's buffer,
// then what the handler wrote so far. final: the handler has returned, so
// the length of the body is known. The fields the server adds (Date,
// Content-Length, a sniffed Content-Type, Connection, Transfer-Encoding)
// are written after the handler's, never put in its map.
func (w *response) commit(final bool, next []byte) {
	w.cmu.Lock()
	neverAsked := w.continuePending
	w.continuePending, w.committed = false, true
	w.cmu.Unlock()
	c, h, code := w.conn, &w.sent, w.status
	isHead := w.req.Method == http.MethodHead
	bodyAllowed := bodyAllowedForStatus(code)
	w.noBody = isHead || !bodyAllowed

	if h.close {
		// The handler closes the connection (refusing a body it did not
		// read, say): nothing of the body is waited for.
		w.closeAfter = true
	}
	// The rest of the request body, read now so that the connection can
	// carry another request (and a client that sends all of its request
	// before reading the answer does not deadlock).
	if b := w.body; b != nil && !w.closeAfter && !w.fullDuplex && !b.drain(neverAsked) {
		w.closeAfter = true
		c.linger = true
	}
	if c.srv.inShutdown.Load() {
		w.closeAfter = true
	}
	te := h.te
	var length string // a Content-Length to add
	switch {
	case w.noBody:
		// Nothing follows the header.
		if isHead && final && w.contentLength < 0 && len(w.buf) > 0 && bodyAllowed {
			length = contentLengthString(len(w.buf))
		}
	case w.contentLength >= 0:
		// Declared by the handler.
	case final && te == "" && !h.trailers:
		w.contentLength = int64(len(w.buf))
		length = contentLengthString(len(w.buf))
	case te == "identity" || !w.req.ProtoAtLeast(1, 1):
		// Delimited by closing the connection.
		w.closeAfter = true
	default:
		w.chunked = true
	}
	var ctype string
	if bodyAllowed && len(w.buf)+len(next) > 0 && !h.encoded && !h.typed && te == "" {
		// From the body's first bytes, as net/http: what is buffered,
		// then what is being written (a first write over bufferLimit).
		sniff := w.buf
		var b [sniffLen]byte
		if len(sniff) < sniffLen && len(next) > 0 {
			n := copy(b[:], w.buf)
			n += copy(b[n:], next)
			sniff = b[:n]
		}
		ctype = http.DetectContentType(sniff)
	}
	var connection string
	if w.closeAfter {
		connection = "close"
	} else if !w.req.ProtoAtLeast(1, 1) {
		connection = "keep-alive"
	}

	bw := c.bw
	if w.req.ProtoAtLeast(1, 1) {
		bw.WriteString("HTTP/1.1 ")
	} else {
		bw.WriteString("HTTP/1.0 ")
	}
	bw.WriteString(statusLine(code))
	if connection != "" {
		bw.Write(w.fields[:h.conn0])
		bw.Write(w.fields[h.conn1:])
	} else {
		bw.Write(w.fields)
	}
	bw.Write(w.lines)
	if w.linesLength {
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), w.contentLength, 10))
		bw.WriteString("\r\n")
	}
	if !h.dated {
		bw.WriteString("Date: ")
		bw.WriteString(httpDate())
		bw.WriteString("\r\n")
	}
	for _, f := range [...]struct{ k, v string }{
		{"Content-Length: ", length}, {"Content-Type: ", ctype}, {"Connection: ", connection},
	} {
		if f.v != "" {
			bw.WriteString(f.k)
			bw.WriteString(f.v)
			bw.WriteString("\r\n")
		}
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
	buf := w.buf
	w.buf = w.buf[:0]
	if err := w.writeBody(buf); err != nil {
		return
	}
	if bwErr(bw) != nil {
		w.failed = true
	}
}

// appendHeaderFields renders the handler's header fields in name order
// (as net/http does: the same answer always reads the same), leaving out
// Transfer-Encoding (the server frames the body), those the status
// forbids, names that are not tokens and trailers, and turning line breaks
// in values into spaces (a handler cannot inject fields). The Connection
// lines are marked in what it returns: the server leaves them out when it
// writes its own.
func (w *response) appendHeaderFields(dst []byte, h http.Header, code int) ([]byte, sentHeader) {
	var sent sentHeader
	keys := w.keys[:0]
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			sent.trailers = true
			continue
		}
		if k == "Transfer-Encoding" || excluded(code, k) || !validFieldName(k) {
			if k == "Transfer-Encoding" && len(h[k]) > 0 {
				sent.te = h[k][0]
			}
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.keys = keys
	for _, k := range keys {
		vv := h[k]
		switch k {
		case "Connection":
			sent.conn0 = len(dst)
			sent.close = headerHasToken(vv, "close")
		case "Content-Encoding":
			sent.encoded = len(vv) > 0
		case "Content-Type":
			sent.typed = true
		case "Date":
			sent.dated = true
		case "Trailer":
			sent.trailers = true
		}
		for _, v := range vv {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = appendFieldValue(dst, v)
			dst = append(dst, "\r\n"...)
		}
		if k == "Connection" {
			sent.conn1 = len(dst)
		}
	}
	return dst, sent
}

func writeFieldValue(bw *bufio.Writer, v string) {
	bw.Write(appendFieldValue(bw.AvailableBuffer(), v))
}

func appendFieldValue(dst []byte, v string) []byte {
	// As net/http writes a value: CR and LF become spaces, then spaces
	// and tabs at either end go (CR and LF are among those trimmed).
	start, end := 0, len(v)
	for start < end && trimmed(v[start]) {
		start++
	}
	for end > start && trimmed(v[end-1]) {
		end--
	}
	v = v[start:end]
	for {
		i := 0
		for i < len(v) && v[i] != '\r' && v[i] != '\n' {
			i++
		}
		dst = append(dst, v[:i]...)
		if i == len(v) {
			return dst
		}
		dst = append(dst, ' ')
		v = v[i+1:]
	}
}

func trimmed(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// excluded reports the fields a status forbids: no Content-Length or
// Transfer-Encoding without a body, no Content-Type on 304 (net/http's
// rules).
func excluded(code int, k string) bool {
	switch k {
	case "Content-Length", "Transfer-Encoding":
		return !bodyAllowedForStatus(code)
	case "Content-Type":
		return code == http.StatusNotModified
	}
	return false
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	if w.hijacked {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true, nil)
	}
	if w.chunked && !w.failed {
		bw := w.conn.bw
		bw.WriteString("0\r\n")
		w.writeTrailers()
		bw.WriteString("\r\n")
	}
	if !w.noBody && w.contentLength >= 0 && w.written != w.contentLength {
		// The handler wrote less than it declared: the client would
		// take the next response for the rest of this one.
		w.closeAfter = true
	}
	if w.failed {
		return
	}
	if err := w.conn.bw.Flush(); err != nil {
		w.failed = true
	}
}

// writeTrailers writes the declared trailer fields that the handler set
// after the header went out, and those named with http.TrailerPrefix.
func (w *response) writeTrailers() {
	bw := w.conn.bw
	write := func(k string, vv []string) {
		if !validFieldName(k) {
			return
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			writeFieldValue(bw, v)
			bw.WriteString("\r\n")
		}
	}
	for _, declared := range w.declared {
		for _, k := range strings.Split(declared, ",") {
			k = http.CanonicalHeaderKey(strings.TrimSpace(k))
			switch k {
			case "", "Transfer-Encoding", "Trailer", "Content-Length":
				continue
			}
			write(k, w.header[k])
		}
	}
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			write(http.CanonicalHeaderKey(name), vv)
		}
	}
}

// bodyAllowedForStatus: no body with 1xx, 204 and 304 (RFC 9110).
func bodyAllowedForStatus(code int) bool {
	switch {
	case code >= 100 && code <= 199:
		return false
	case code == http.StatusNoContent, code == http.StatusNotModified:
		return false
	}
	return true
}

// headerHasToken reports whether a comma-separated field contains token,
// case-insensitively.
func headerHasToken(vv []string, token string) bool {
	for _, v := range vv {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// statusLines holds "200 OK\r\n" and the like, built once.
var statusLines [1000]string

func init() {
	for code := 100; code <= 999; code++ {
		if text := http.StatusText(code); text != "" {
			statusLines[code] = strconv.Itoa(code) + " " + text + "\r\n"
		} else {
			statusLines[code] = strconv.Itoa(code) + " status code " + strconv.Itoa(code) + "\r\n"
		}
	}
}

func statusLine(code int) string { return statusLines[code] }

// contentLengthString avoids an allocation for small bodies.
var smallLengths [1024]string

func init() {
	for i := range smallLengths {
		smallLengths[i] = strconv.Itoa(i)
	}
}

func contentLengthString(n int) string {
	if n < len(smallLengths) {
		return smallLengths[n]
	}
	return strconv.Itoa(n)
}

// The Date field, formatted once a second.
type dateValue struct {
	sec int64
	v   string
}

var dateCache atomic.Pointer[dateValue]

func httpDate() string {
	now := time.Now()
	sec := now.Unix()
	if d := dateCache.Load(); d != nil && d.sec == sec {
		return d.v
	}
	d := &dateValue{sec: sec, v: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.v
}
