package h1server

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// readPlainRequest parses, into req, a request head that waits whole in
// br's buffer and has the plain shape nearly every request has:
//
//	METHOD SP origin-form SP HTTP/1.1 CRLF   (or HTTP/1.0)
//	Name: value CRLF                         (visible ASCII, SP, HTAB)
//	...
//	CRLF
//
// with no Content-Length, Transfer-Encoding, Trailer or Pragma field, at
// most one Host, and no CONNECT. It then consumes the head and reports
// true; req is what http.ReadRequest would have returned for the same
// bytes (FuzzPlainRequest holds it to that, field by field).
//
// For anything else — a head not yet read whole, a bare LF, obs-fold, a
// control or non-ASCII byte, an absolute or asterisk target, another
// protocol version, a request with a body — it reports false and consumes
// nothing: http.ReadRequest then reads the request, with its own rules and
// errors. The plain shape is a strict subset of what http.ReadRequest
// accepts, so nothing is read here that net/http would refuse or read
// differently.
//
// It costs one string for the whole head (method, target, names and
// values are parts of it), one slice for the values, the header map and
// the URL: a handful of allocations where http.ReadRequest makes one or
// two for every line. The price: a value kept after the request keeps the
// whole head (at most the 4 KiB buffer) alive; code that keeps request
// strings for long copies them (strings.Clone), as package session does.
func readPlainRequest(br *bufio.Reader, req *http.Request) bool {
	return readPlainRequestInto(br, req, nil)
}

// headBuffers is what readPlainRequestInto reuses for a connection's next
// request: the URL, the header map and its values' slice. They belong to
// the request handed to the handler until it returns (the connection
// keeps them only while it may reuse that request: conn.handle).
type headBuffers struct {
	url    url.URL
	header http.Header
	vals   []string
}

// empty drops what the last request left in b.
func (b *headBuffers) empty() {
	b.url = url.URL{}
	clear(b.header)
	clear(b.vals)
}

// readPlainRequestInto is readPlainRequest, filling b's URL, header and
// values rather than new ones when b is not nil.
func readPlainRequestInto(br *bufio.Reader, req *http.Request, b *headBuffers) bool {
	buf, _ := br.Peek(br.Buffered())
	end := indexHeadEnd(buf)
	if end < 0 {
		return false
	}
	// Checked on bytes first: a head that turns out not to be plain
	// costs nothing but the scan.
	lines, ok := plainHead(buf[:end])
	if !ok {
		return false
	}
	s := string(buf[:end])

	sp := strings.IndexByte(s, ' ')
	method := s[:sp]
	rest := s[sp+1:]
	sp = strings.IndexByte(rest, ' ')
	target := rest[:sp]
	minor := int(rest[sp+8] - '0') // "HTTP/1.x"
	var u *url.URL
	if b != nil && originFormInto(target, &b.url) {
		u = &b.url
	} else if u = originForm(target); u == nil {
		var err error
		if u, err = url.ParseRequestURI(target); err != nil {
			return false // net/http's error, from net/http
		}
	}

	var h http.Header
	var vals []string
	if b != nil {
		if b.header == nil {
			b.header = make(http.Header, lines)
		}
		if cap(b.vals) < lines {
			b.vals = make([]string, lines)
		}
		h, vals = b.header, b.vals[:lines]
		clear(h)
	} else {
		h, vals = make(http.Header, lines), make([]string, lines)
	}
	var host string
	hosts := 0
	line := s[strings.IndexByte(s, '\n')+1:]
	for len(line) > 2 { // not the final CRLF
		colon := strings.IndexByte(line, ':')
		eol := strings.IndexByte(line, '\r')
		name := canonicalName(line[:colon])
		value := trimOWS(line[colon+1 : eol])
		line = line[eol+2:]
		switch name {
		case "Content-Length", "Transfer-Encoding", "Trailer", "Pragma":
			// Body framing and net/http's rewrites: its parser's job.
			return false
		case "Host":
			// net/http takes Host out of the header into req.Host
			// (http.ReadRequest, and its server), and refuses two. An
			// empty one is left to the scan of heads that are not
			// plain, which tells it from none.
			if hosts++; hosts > 1 || value == "" {
				return false
			}
			host = value
			continue
		}
		if vv := h[name]; vv != nil {
			h[name] = append(vv, value)
			continue
		}
		vals[0] = value
		h[name], vals = vals[:1:1], vals[1:]
	}

	*req = http.Request{
		Method:     method,
		URL:        u,
		Proto:      protoNames[minor],
		ProtoMajor: 1,
		ProtoMinor: minor,
		Header:     h,
		Body:       http.NoBody,
		Host:       host,
		RequestURI: target,
		// shouldClose in net/http: HTTP/1.0 closes unless asked to keep
		// alive. headerHasToken is httpguts.HeaderValuesContainsToken
		// on values of visible ASCII, SP and HTAB only.
		Close: headerHasToken(h["Connection"], "close") ||
			minor == 0 && !headerHasToken(h["Connection"], "keep-alive"),
	}
	br.Discard(end)
	return true
}

var protoNames = [2]string{"HTTP/1.0", "HTTP/1.1"}

// originForm returns the URL url.ParseRequestURI makes of an origin-form
// target whose path has only bytes it keeps as they are (no
// percent-encoding, nothing it would escape): the path and the query
// string, split at the first "?". For any other target, nil.
func originForm(target string) *url.URL {
	u := new(url.URL)
	if !originFormInto(target, u) {
		return nil
	}
	return u
}

// originFormInto is originForm, filling u (only when it reports true).
func originFormInto(target string, u *url.URL) bool {
	if target == "" || target[0] != '/' {
		return false
	}
	path, query, hasQuery := strings.Cut(target, "?")
	for i := 0; i < len(path); i++ {
		if !pathAsIs[path[i]] {
			return false
		}
	}
	for i := 0; i < len(query); i++ {
		if c := query[i]; c < ' ' || c == 0x7f {
			return false // refused by url.ParseRequestURI (readPlainRequest never has one)
		}
	}
	// A target ending in its only "?" keeps it (URL.ForceQuery).
	*u = url.URL{Path: path, RawQuery: query, ForceQuery: hasQuery && query == ""}
	return true
}

// pathAsIs[c]: url.ParseRequestURI keeps c in a path as it is (URL.Path
// is the bytes, URL.RawPath empty). Found by asking it, byte by byte:
// unescaping and escaping a path work byte by byte, so a path of only
// these bytes is kept whole.
var pathAsIs = func() (t [256]bool) {
	for c := byte(0x21); c < 0x7f; c++ {
		if c == '?' || c == '%' {
			continue
		}
		p := "/" + string(c)
		u, err := url.ParseRequestURI(p)
		t[c] = err == nil && *u == url.URL{Path: p}
	}
	return t
}()

// indexHeadEnd returns the length of the head at the start of buf, up to
// and including the CR LF CR LF that ends it, or -1.
func indexHeadEnd(buf []byte) int {
	for i := 0; ; {
		j := indexCRLF(buf[i:])
		if j < 0 {
			return -1
		}
		i += j + 2
		if len(buf)-i >= 2 && buf[i] == '\r' && buf[i+1] == '\n' {
			return i + 2
		}
	}
}

func indexCRLF(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\r')
		if j < 0 || i+j+1 >= len(b) {
			return -1
		}
		i += j
		if b[i+1] == '\n' {
			return i
		}
		i++
	}
}

// plainHead checks that head (as found by indexHeadEnd) has the plain
// shape readPlainRequest reads, and returns its number of field lines.
func plainHead(head []byte) (lines int, ok bool) {
	// Request line.
	i := 0
	for i < len(head) && tokenChars[head[i]] {
		i++
	}
	if i == 0 || i >= len(head) || head[i] != ' ' {
		return 0, false
	}
	if m := head[:i]; string(m) == "CONNECT" || string(m) == "PRI" {
		return 0, false
	}
	i++
	if i >= len(head) || head[i] != '/' {
		return 0, false // asterisk, absolute and authority forms
	}
	for i < len(head) && head[i] > ' ' && head[i] < 0x7f {
		i++
	}
	const v = " HTTP/1.x\r\n"
	if len(head)-i < len(v) || string(head[i:i+8]) != " HTTP/1." ||
		head[i+8] != '0' && head[i+8] != '1' || head[i+9] != '\r' || head[i+10] != '\n' {
		return 0, false
	}
	i += len(v)

	// Field lines, up to the final CR LF.
	for len(head)-i > 2 {
		start := i
		for i < len(head) && tokenChars[head[i]] {
			i++
		}
		if i == start || i >= len(head) || head[i] != ':' {
			return 0, false // obs-fold, a bare LF, a bad name
		}
		for i++; i < len(head) && head[i] != '\r'; i++ {
			if c := head[i]; (c < ' ' || c >= 0x7f) && c != '\t' {
				return 0, false
			}
		}
		if len(head)-i < 2 || head[i+1] != '\n' {
			return 0, false
		}
		i += 2
		lines++
	}
	return lines, len(head)-i == 2 && head[i] == '\r' && head[i+1] == '\n'
}

// canonicalName returns a field name (tchars only) in net/http's
// canonical form: the name itself when it already is (no allocation),
// otherwise textproto's (interned for common names).
func canonicalName(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return textproto.CanonicalMIMEHeaderKey(name)
		}
		upper = c == '-'
	}
	return name
}

// trimOWS removes spaces and horizontal tabs around a field value.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
