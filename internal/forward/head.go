package forward

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Errors of parsing what the upstream sent. None is a timeout, so the
// gateway answers them 502.
var (
	errHeaderTooLarge = errors.New("forward: response header larger than 1 MiB")
	errMalformed      = errors.New("forward: malformed response from upstream")
)

// IsBadResponse reports whether err says that the upstream's response
// was not one the Forwarder can pass on: not HTTP/1.x, malformed, or
// beyond the limits on what an upstream may send.
func IsBadResponse(err error) bool {
	return errors.Is(err, errMalformed) || errors.Is(err, errHeaderTooLarge)
}

// fieldOverhead is what each field costs against MaxHeaderBytes beyond its
// bytes: the memory of its offsets and of its entry in a header map.
const fieldOverhead = 32

// A head is a parsed response head (status line and fields) or trailer
// section. The field names, in canonical form, and the values, trimmed
// and with obs-folds replaced by a space, are laid end to end in buf;
// fields holds their offsets, in the order received. Its slices are
// reused from one response to the next on a connection.
type head struct {
	status int
	minor  int // of HTTP/1.minor
	buf    []byte
	fields []field
	line   []byte // a line longer than the bufio.Reader's buffer
}

type field struct{ k0, k1, v0, v1 int32 }

func (h *head) name(f field) []byte  { return h.buf[f.k0:f.k1] }
func (h *head) value(f field) []byte { return h.buf[f.v0:f.v1] }

// readResponse reads a status line and fields from br into h. An error
// wrapping errMalformed or errHeaderTooLarge means the upstream sent
// something that is not an HTTP/1.x response head; io.EOF means it closed
// the connection before sending anything, io.ErrUnexpectedEOF that it
// closed it mid-head.
func (h *head) readResponse(br *bufio.Reader) error {
	h.buf, h.fields = h.buf[:0], h.fields[:0]
	budget := MaxHeaderBytes
	line, err := h.readLine(br, &budget)
	if err != nil {
		return err
	}
	if err := h.parseStatus(line); err != nil {
		return err
	}
	return h.readFields(br, &budget)
}

// readTrailer reads a trailer section (after the last chunk) into h.
func (h *head) readTrailer(br *bufio.Reader) error {
	h.buf, h.fields = h.buf[:0], h.fields[:0]
	budget := MaxHeaderBytes
	err := h.readFields(br, &budget)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// parseStatus parses "HTTP/1.x SP 3DIGIT [SP reason]"; the reason is not
// kept (net/http's server writes its own), as httputil.ReverseProxy does.
func (h *head) parseStatus(line []byte) error {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || !isDigit(line[7]) || line[8] != ' ' ||
		line[9] < '1' || line[9] > '9' || !isDigit(line[10]) || !isDigit(line[11]) ||
		(len(line) > 12 && line[12] != ' ') {
		return fmt.Errorf("%w: status line %q", errMalformed, quote(line))
	}
	h.minor = int(line[7] - '0')
	h.status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	return nil
}

// readFields reads field lines up to and including the empty line that
// ends them.
func (h *head) readFields(br *bufio.Reader, budget *int) error {
	for {
		line, err := h.readLine(br, budget)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if len(line) == 0 {
			return nil
		}
		if *budget -= fieldOverhead; *budget < 0 {
			return errHeaderTooLarge
		}
		if line[0] == ' ' || line[0] == '\t' {
			// obs-fold (RFC 9112 §5.2): continues the previous value.
			if len(h.fields) == 0 {
				return fmt.Errorf("%w: header starts with a continuation line %q", errMalformed, quote(line))
			}
			v := trim(line)
			if !validValue(v) {
				return fmt.Errorf("%w: header line %q", errMalformed, quote(line))
			}
			f := &h.fields[len(h.fields)-1]
			if len(v) > 0 {
				if f.v1 > f.v0 {
					h.buf = append(h.buf, ' ')
				}
				h.buf = append(h.buf, v...)
				f.v1 = int32(len(h.buf))
			}
			continue
		}
		i := bytes.IndexByte(line, ':')
		v := trim(line[i+1:])
		if i <= 0 || !validValue(v) {
			return fmt.Errorf("%w: header line %q", errMalformed, quote(line))
		}
		k0 := len(h.buf)
		h.buf = append(h.buf, line[:i]...)
		k1 := len(h.buf)
		if !canonicalize(h.buf[k0:k1]) {
			return fmt.Errorf("%w: header line %q", errMalformed, quote(line))
		}
		h.buf = append(h.buf, v...)
		h.fields = append(h.fields, field{int32(k0), int32(k1), int32(k1), int32(len(h.buf))})
	}
}

// readLine returns the next line without its "\n" or "\r\n", valid until
// the next read from br, and charges it to budget.
func (h *head) readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		h.line = append(h.line[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(h.line) > *budget {
				return nil, errHeaderTooLarge
			}
			line, err = br.ReadSlice('\n')
			h.line = append(h.line, line...)
		}
		line = h.line
	}
	if *budget -= len(line); *budget < 0 {
		return nil, errHeaderTooLarge
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// quote shortens line for an error message.
func quote(line []byte) []byte {
	if len(line) > 80 {
		return line[:80]
	}
	return line
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// trim removes leading and trailing spaces and tabs.
func trim(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// tchar marks the bytes of an RFC 9110 token (§5.6.2).
var tchar = [256]bool{
	'!': true, '#': true, '$': true, '%': true, '&': true, '\'': true, '*': true, '+': true,
	'-': true, '.': true, '^': true, '_': true, '`': true, '|': true, '~': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
	'A': true, 'B': true, 'C': true, 'D': true, 'E': true, 'F': true, 'G': true, 'H': true, 'I': true,
	'J': true, 'K': true, 'L': true, 'M': true, 'N': true, 'O': true, 'P': true, 'Q': true, 'R': true,
	'S': true, 'T': true, 'U': true, 'V': true, 'W': true, 'X': true, 'Y': true, 'Z': true,
	'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true, 'g': true, 'h': true, 'i': true,
	'j': true, 'k': true, 'l': true, 'm': true, 'n': true, 'o': true, 'p': true, 'q': true, 'r': true,
	's': true, 't': true, 'u': true, 'v': true, 'w': true, 'x': true, 'y': true, 'z': true,
}

// validName reports whether b is a field name: a token.
func validName[T string | []byte](b T) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); i++ {
		if !tchar[b[i]] {
			return false
		}
	}
	return true
}

// validValue reports whether b may be (part of) a field value: visible
// ASCII, space, tab and obs-text (RFC 9110 §5.5); no CR, LF, NUL or other
// controls.
func validValue[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if notValue[b[i]] {
			return false
		}
	}
	return true
}

// notValue marks the bytes a field value may not hold.
var notValue = func() (t [256]bool) {
	for c := range ' ' {
		t[c] = c != '\t'
	}
	t[0x7f] = true
	return t
}()

// canonicalize puts the field name b in canonical form in place
// ("content-type" → "Content-Type", as textproto.CanonicalMIMEHeaderKey
// makes it) and reports whether it is a token.
func canonicalize(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	upper := true
	for i, c := range b {
		if !tchar[c] {
			return false
		}
		if upper && 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		} else if !upper && 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
		upper = c == '-'
	}
	return true
}

func validHeaderValue(s string) bool { return validValue(s) }

// framing is how a response's body is delimited and what becomes of the
// connection after it (RFC 9112 §6.3).
type framing struct {
	length int64 // of the body; -1 when chunked or delimited by the connection closing
	// declared is the Content-Length passed on to the client (for a
	// response to HEAD too); -1: none.
	declared int64
	chunked  bool
	close    bool // the connection cannot carry another request after this response
	stream   bool // the body is flushed to the client as it arrives
	// connList is set when Connection lists fields other than close and
	// keep-alive, which are then removed.
	connList bool
}

// framing tells how h's body is delimited for a request with method.
func (h *head) framing(method string) (framing, error) {
	var (
		fr         framing
		keepAlive  bool
		te, cl, ct = -1, -1, -1
		nte        int
		length     int64 = -1
	)
	for i, f := range h.fields {
		switch string(h.name(f)) {
		case "Connection":
			for tok := range tokens(h.value(f)) {
				switch {
				case equalFold(tok, "close"):
					fr.close = true
				case equalFold(tok, "keep-alive"):
					keepAlive = true
				default:
					fr.connList = true
				}
			}
		case "Transfer-Encoding":
			te = i
			nte++
		case "Content-Length":
			n, ok := parseLength(h.value(f))
			if !ok || (cl >= 0 && n != length) {
				return fr, fmt.Errorf("%w: Content-Length %q", errMalformed, quote(h.value(f)))
			}
			cl, length = i, n
		case "Content-Type":
			ct = i
		}
	}
	if te >= 0 && cl >= 0 {
		// Both framings: a classic desync signal. Whatever the body
		// turns out to be, the connection is not trusted with another
		// request (RFC 9112 §6.3).
		fr.close = true
	}
	if h.minor == 0 {
		// HTTP/1.0 knows no chunking and closes unless asked not to; a
		// Transfer-Encoding from it is not trusted to frame anything.
		if te >= 0 {
			fr.close = true
		}
		te, fr.close = -1, fr.close || !keepAlive
	}
	fr.declared = -1
	if cl >= 0 {
		fr.declared = length
	}
	if method == "HEAD" || h.status < 200 || h.status == 204 || h.status == 304 {
		fr.length = 0
		return fr, nil
	}
	switch {
	case te >= 0:
		if nte != 1 || !equalFold(h.value(h.fields[te]), "chunked") {
			return fr, fmt.Errorf("%w: unsupported Transfer-Encoding %q", errMalformed, quote(h.value(h.fields[te])))
		}
		fr.chunked, fr.length, fr.declared = true, -1, -1
		if cl >= 0 {
			// Both: chunked wins, the length is dropped, and the
			// connection is not trusted with another request
			// (RFC 9112 §6.3).
			fr.close = true
		}
	case cl >= 0:
		fr.length = length
	default:
		fr.length, fr.close = -1, true
	}
	fr.stream = fr.length < 0 || (ct >= 0 && isEventStream(h.value(h.fields[ct])))
	return fr, nil
}

// parseLength parses a Content-Length value: digits only.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// isEventStream reports whether the media type in a Content-Type value is
// text/event-stream.
func isEventStream(v []byte) bool {
	if i := bytes.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	return equalFold(trim(v), "text/event-stream")
}

// tokens yields the trimmed, non-empty elements of a comma-separated list.
func tokens[T string | []byte](v T) func(func(T) bool) {
	return func(yield func(T) bool) {
		for len(v) > 0 {
			var tok T
			i := 0
			for i < len(v) && v[i] != ',' {
				i++
			}
			tok, v = v[:i], v[min(i+1, len(v)):]
			for len(tok) > 0 && (tok[0] == ' ' || tok[0] == '\t') {
				tok = tok[1:]
			}
			for len(tok) > 0 && (tok[len(tok)-1] == ' ' || tok[len(tok)-1] == '\t') {
				tok = tok[:len(tok)-1]
			}
			if len(tok) > 0 && !yield(tok) {
				return
			}
		}
	}
}

// equalFold reports whether a equals the lower-case ASCII s, ignoring
// ASCII case.
func equalFold[T string | []byte](a T, s string) bool {
	if len(a) != len(s) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether one of the comma-separated lists in values has
// the element tok (lower case), ignoring ASCII case.
func hasToken(values []string, tok string) bool {
	for _, v := range values {
		for t := range tokens(v) {
			if equalFold(t, tok) {
				return true
			}
		}
	}
	return false
}

// listed reports whether one of the comma-separated lists in values names
// the field name, ignoring ASCII case.
func listed[T string | []byte](values []T, name string) bool {
	for _, v := range values {
		for t := range tokens(v) {
			if len(t) == len(name) && strings.EqualFold(string(t), name) {
				return true
			}
		}
	}
	return false
}

// hopByHop reports whether the canonical field name is hop-by-hop
// whatever Connection says.
func hopByHop[T string | []byte](name T) bool {
	switch string(name) {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}
