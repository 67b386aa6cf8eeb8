package httpsyntax

import (
	"bytes"
	"net/netip"
	"net/url"
	"strings"
)

// What floodgate's HTTP/1.x servers accept, decided here once for both of
// them (floodgate's own and net/http's): the size of a request head, its
// framing, its method and its Host. Go's parser drops what a decision
// needs (the Content-Length of a chunked request, the Transfer-Encoding of
// an HTTP/1.0 request, the Host field of an absolute-form request), so a
// HeadScanner reads those facts from the head's bytes as they arrive, and
// Refuse judges them.

// A Head is what a request head's bytes say about its size, framing,
// method and Host, before any parser merges or drops fields. The zero
// value is an empty head; a HeadScanner fills it.
type Head struct {
	// Size is the number of bytes of the head: from its first byte (CR
	// or LF bytes before the request line included) through the empty
	// line that ends it.
	Size int
	// Minor is 0 for HTTP/1.0, 1 for HTTP/1.1 (and 1.2 to 1.9), -1 for
	// any other version.
	Minor int
	// Connect: the method is CONNECT. OptionsStar: the request is
	// OPTIONS *, which both engines answer themselves once the policy let
	// it through.
	Connect, OptionsStar bool
	// ObsFold: a field line starts with a space or tab (RFC 9112 §5.2).
	ObsFold bool

	// ContentLengths counts Content-Length field lines; ContentLength
	// is their value when they agree on a valid one, -1 otherwise.
	ContentLengths int
	ContentLength  int64
	// TransferEncodings counts Transfer-Encoding field lines; codings
	// counts the transfer codings they list, chunkedLast is true when
	// the last one is chunked and chunkedEarly when chunked is listed
	// anywhere else.
	TransferEncodings int
	codings           int
	chunkedLast       bool
	chunkedEarly      bool

	// Hosts counts Host field lines; host holds the first's value (up
	// to len(host) bytes: hostLong marks a longer one).
	Hosts    int
	host     [maxHostField]byte
	hostLen  int
	hostLong bool
}

// maxHostField bounds a Host field value: a DNS name (253 bytes) and a
// port, or a bracketed IPv6 address with a zone.
const maxHostField = 300

// HostField returns the first Host field's value, trimmed of spaces and
// tabs, and whether it fitted (a longer one is invalid).
func (h *Head) HostField() (string, bool) {
	return string(h.host[:h.hostLen]), !h.hostLong
}

// Chunked reports whether the head declares a Transfer-Encoding.
func (h *Head) Chunked() bool { return h.TransferEncodings > 0 }

// Scanner states.
const (
	stStart   = iota // before the request line: CR and LF are skipped
	stMethod         // the method
	stTarget         // the request target
	stVersion        // the protocol version, up to the LF
	stLine           // the start of a field line, or the empty line
	stLineCR         // a CR at the start of a line
	stName           // a field name
	stValue          // a field value, up to the LF
	stDone           // the head has ended
)

// Which field a line is.
const (
	fieldOther = iota
	fieldContentLength
	fieldTransferEncoding
	fieldHost
	fieldFolded // an obs-fold continuation line
)

// A HeadScanner reads a request head's bytes as they arrive and fills a
// Head. It follows Go's parser where the two could disagree on what a
// field is: a line ends at LF (a CR before it is dropped), a name ends at
// the first colon, values are trimmed of spaces and tabs. It allocates
// nothing. The zero value is ready to scan a head.
type HeadScanner struct {
	Head
	state  uint8
	field  uint8
	tok    [17]byte // the method, version, name or coding being read (lower case for names and codings)
	tokLen int      // its length; beyond len(tok), counted but not kept
	// the value being read: Content-Length's digits so far
	cl    int64
	clBad bool
	// trailing spaces or tabs seen but not yet kept (Host, codings)
	ows    int
	target int // bytes of the request target
	star   bool
}

// Reset makes s ready for the next head.
func (s *HeadScanner) Reset() {
	*s = HeadScanner{}
}

// Done reports whether the head has ended.
func (s *HeadScanner) Done() bool { return s.state == stDone }

// Write scans p, the next bytes of the head, and returns how many of them
// belong to it: all of them until the empty line that ends the head, which
// is the last byte counted (Done is then true and later bytes are not the
// head's).
func (s *HeadScanner) Write(p []byte) int {
	for i := 0; i < len(p); i++ {
		if s.state == stDone {
			return i
		}
		if s.skipping() {
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				s.Size += len(p) - i
				return len(p)
			}
			s.Size += j
			i += j
		}
		s.Size++
		s.step(p[i])
	}
	return len(p)
}

// WriteString is Write for a string.
func (s *HeadScanner) WriteString(p string) int {
	for i := 0; i < len(p); i++ {
		if s.state == stDone {
			return i
		}
		if s.skipping() {
			j := strings.IndexByte(p[i:], '\n')
			if j < 0 {
				s.Size += len(p) - i
				return len(p)
			}
			s.Size += j
			i += j
		}
		s.Size++
		s.step(p[i])
	}
	return len(p)
}

// skipping reports whether the scanner is in the value of a field it
// reads nothing from: the bytes up to the LF can be skipped at once.
func (s *HeadScanner) skipping() bool {
	return s.state == stValue && (s.field == fieldOther || s.field == fieldFolded)
}

func (s *HeadScanner) keep(c byte) {
	if s.tokLen < len(s.tok) {
		s.tok[s.tokLen] = c
	}
	s.tokLen++
}

func (s *HeadScanner) token() string {
	if s.tokLen > len(s.tok) {
		return "" // too long to be anything looked for
	}
	return string(s.tok[:s.tokLen])
}

func (s *HeadScanner) step(c byte) {
	switch s.state {
	case stStart:
		if c == '\r' || c == '\n' {
			return
		}
		s.ContentLength = -1
		s.Minor = -1
		s.state = stMethod
		fallthrough
	case stMethod:
		if c == ' ' {
			m := s.token()
			s.Connect = m == "CONNECT"
			s.OptionsStar = m == "OPTIONS" // with a target of "*", below
			s.tokLen = 0
			s.state = stTarget
			return
		}
		if c == '\n' {
			s.endRequestLine()
			return
		}
		s.keep(c)
	case stTarget:
		switch c {
		case ' ':
			s.OptionsStar = s.OptionsStar && s.target == 1 && s.star
			s.state = stVersion
		case '\n':
			s.OptionsStar = false
			s.endRequestLine()
		default:
			s.target++
			s.star = c == '*'
		}
	case stVersion:
		if c == '\n' {
			v := s.token()
			if v != "" && v[len(v)-1] == '\r' {
				v = v[:len(v)-1]
			}
			// As Go's parser reads it: HTTP/1.0, or HTTP/1.1 and the
			// later 1.x it serves as 1.1 (RFC 9112 §2.3).
			if len(v) == 8 && v[:7] == "HTTP/1." && '0' <= v[7] && v[7] <= '9' {
				s.Minor = min(int(v[7]-'0'), 1)
			}
			s.endRequestLine()
			return
		}
		s.keep(c)
	case stLine:
		switch c {
		case '\n':
			s.state = stDone
		case '\r':
			s.state = stLineCR
		case ' ', '\t':
			s.ObsFold = true
			s.field = fieldFolded
			s.state = stValue
		default:
			s.tokLen = 0
			s.state = stName
			s.step(c)
		}
	case stLineCR:
		if c == '\n' {
			s.state = stDone
			return
		}
		// A CR that does not end the head starts a line Go refuses.
		s.tokLen = 0
		s.keep('\r')
		s.state = stName
		s.step(c)
	case stName:
		switch c {
		case ':':
			s.startValue()
		case '\n':
			s.state = stLine // no colon: a line Go refuses
		default:
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.keep(c)
		}
	case stValue:
		if c == '\n' {
			s.endValue()
			s.state = stLine
			return
		}
		s.value(c)
	}
}

func (s *HeadScanner) endRequestLine() {
	s.tokLen = 0
	s.state = stLine
}

func (s *HeadScanner) startValue() {
	name := s.token()
	s.state = stValue
	s.ows = 0
	s.tokLen = 0
	switch name {
	case "content-length":
		s.field = fieldContentLength
		s.ContentLengths++
		s.cl, s.clBad = 0, false
	case "transfer-encoding":
		s.field = fieldTransferEncoding
		s.TransferEncodings++
	case "host":
		s.field = fieldHost
		s.Hosts++
	default:
		s.field = fieldOther
	}
}

func isOWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// value takes one byte of a field value. Spaces, tabs and CRs around a
// value are not part of it (a CR within one makes Go refuse the request).
func (s *HeadScanner) value(c byte) {
	switch s.field {
	case fieldContentLength:
		switch {
		case isOWS(c):
			if s.tokLen > 0 {
				s.ows++
			}
		case '0' <= c && c <= '9' && s.ows == 0:
			s.tokLen = 1
			if s.cl > (1<<63-1-9)/10 {
				s.clBad = true
			}
			s.cl = s.cl*10 + int64(c-'0')
		default:
			s.clBad = true
		}
	case fieldTransferEncoding:
		switch {
		case c == ',':
			s.endCoding()
		case isOWS(c):
			if s.tokLen > 0 {
				s.ows++
			}
		default:
			for ; s.ows > 0; s.ows-- {
				s.keep(' ')
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			s.keep(c)
		}
	case fieldHost:
		if s.Hosts > 1 {
			return
		}
		if isOWS(c) {
			if s.hostLen > 0 || s.hostLong {
				s.ows++
			}
			return
		}
		for ; s.ows > 0; s.ows-- {
			s.hostByte(' ')
		}
		s.hostByte(c)
	}
}

func (h *Head) hostByte(c byte) {
	if h.hostLen < len(h.host) {
		h.host[h.hostLen] = c
		h.hostLen++
	} else {
		h.hostLong = true
	}
}

// endCoding ends a transfer coding of a list (at a comma or the line's end).
func (s *HeadScanner) endCoding() {
	if s.tokLen > 0 {
		if s.chunkedLast {
			s.chunkedEarly = true
		}
		s.chunkedLast = s.token() == "chunked"
		s.codings++
	}
	s.tokLen, s.ows = 0, 0
}

func (s *HeadScanner) endValue() {
	switch s.field {
	case fieldContentLength:
		v := s.cl
		if s.clBad || s.tokLen == 0 {
			v = -1
		}
		if s.ContentLengths == 1 || s.ContentLength == v {
			s.ContentLength = v
		} else {
			s.ContentLength = -1 // lines that disagree
		}
	case fieldTransferEncoding:
		s.endCoding()
	}
	s.field = fieldOther
	s.tokLen, s.ows = 0, 0
}

// The statuses of a refusal (net/http's values: this package imports
// little), and their reasons.
const (
	statusBadRequest           = 400
	statusHeaderFieldsTooLarge = 431
	statusNotImplemented       = 501
	statusVersionNotSupported  = 505

	reasonBothLengths        = "both Content-Length and Transfer-Encoding"
	reasonTransferEncoding10 = "Transfer-Encoding in an HTTP/1.0 request"
	reasonChunkedNotLast     = "Transfer-Encoding whose last coding is not chunked"
	reasonCodings            = "unsupported transfer coding"
	reasonObsFold            = "obsolete line folding"
	reasonConnect            = "CONNECT is not served"
	reasonMissingHost        = "missing required Host header"
	reasonManyHosts          = "more than one Host header"
	reasonBadHost            = "malformed Host header"
	reasonBadTarget          = "absolute-form target without an http or https authority"
)

// RefuseSize refuses a head of size bytes over maxBytes: 431.
func RefuseSize(size, maxBytes int) (status int, reason string) {
	if size > maxBytes {
		return statusHeaderFieldsTooLarge, ""
	}
	return 0, ""
}

// Refuse decides whether a request with head h, which Go's parser has
// accepted, is refused before any handler sees it, and how: a status and
// its reason, or 0. scheme and authority are the request target's when it
// is in absolute form ("" otherwise). In this order:
//
//   - a version other than HTTP/1.x: 505;
//   - a head over maxBytes: 431;
//   - ambiguous framing (RFC 9112 §6.1, §6.3): Content-Length with
//     Transfer-Encoding, Transfer-Encoding in HTTP/1.0, a last coding
//     other than chunked, chunked listed twice: 400 (Go's parser refuses
//     the last two itself today, with 501, so this check stands behind
//     it); chunked after other codings, which floodgate does not decode:
//     501; obs-fold: 400;
//   - the Host field lines, as RefuseHost: 400 (a CONNECT without Host
//     is not asked for one);
//   - CONNECT: 501 (floodgate tunnels nothing);
//   - an absolute-form target, as RefuseHost: 400.
func (h *Head) Refuse(maxBytes int, scheme, authority string) (status int, reason string) {
	if h.Minor < 0 {
		return statusVersionNotSupported, "unsupported protocol version"
	}
	if status, reason = RefuseSize(h.Size, maxBytes); status != 0 {
		return status, reason
	}
	if h.ObsFold {
		return statusBadRequest, reasonObsFold
	}
	if h.TransferEncodings > 0 {
		switch {
		case h.Minor == 0:
			return statusBadRequest, reasonTransferEncoding10
		case h.ContentLengths > 0:
			return statusBadRequest, reasonBothLengths
		case !h.chunkedLast || h.chunkedEarly:
			return statusBadRequest, reasonChunkedNotLast
		case h.codings > 1:
			return statusNotImplemented, reasonCodings
		}
	}
	host, ok := h.HostField()
	if !ok {
		return statusBadRequest, reasonBadHost
	}
	// The Host field lines before the method, as Go's server judges them
	// before any handler, so that a CONNECT gets one answer from either
	// engine: 400 for a bad Host or two, 501 without one (Go does not ask
	// a CONNECT for its Host).
	if h.Connect && h.Hosts == 0 {
		return statusNotImplemented, reasonConnect
	}
	if status, reason = refuseHostField(h.Minor, h.Hosts, host); status != 0 {
		return status, reason
	}
	if h.Connect {
		return statusNotImplemented, reasonConnect
	}
	return refuseTarget(scheme, authority)
}

// RefuseHost applies the Host policy of RFC 9112 §3.2 to a request of
// HTTP/1.minor with hosts Host field lines, the first's value host, and an
// absolute-form target's scheme and authority ("" for origin form):
//
//   - HTTP/1.1 without Host, more than one Host, a Host that is not a
//     valid host[:port] (ValidHost): 400, whatever the target's form;
//   - an empty Host: 400 too — an http URI with an empty host is invalid
//     (RFC 9110 §4.2.1), and a rule or route reading the host would see
//     none;
//   - an absolute-form target: only http and https with a valid
//     authority and no userinfo; its authority then replaces Host (RFC
//     9112 §3.2.2), as Go's parser does.
func RefuseHost(minor, hosts int, host, scheme, authority string) (status int, reason string) {
	if status, reason = refuseHostField(minor, hosts, host); status != 0 {
		return status, reason
	}
	return refuseTarget(scheme, authority)
}

// refuseHostField is RefuseHost's judgement of the Host field lines.
func refuseHostField(minor, hosts int, host string) (status int, reason string) {
	switch {
	case hosts > 1:
		return statusBadRequest, reasonManyHosts
	case hosts == 0 && minor != 0:
		return statusBadRequest, reasonMissingHost
	case hosts == 1 && !ValidHost(host):
		return statusBadRequest, reasonBadHost
	}
	return 0, ""
}

// refuseTarget is RefuseHost's judgement of an absolute-form target.
func refuseTarget(scheme, authority string) (status int, reason string) {
	if scheme != "" && (!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") || !ValidHost(authority)) {
		return statusBadRequest, reasonBadTarget
	}
	return 0, ""
}

// Target returns the scheme and authority of a parsed request target in
// absolute form, for Refuse and RefuseHost: "" for origin, asterisk and
// authority form (CONNECT's). A target with userinfo gets an authority
// that is not valid (RFC 9110 §4.2.4: its presence is an error).
func Target(u *url.URL) (scheme, authority string) {
	if u == nil || u.Scheme == "" {
		return "", ""
	}
	if u.User != nil {
		return u.Scheme, "@"
	}
	return u.Scheme, u.Host
}

// ParsedHead returns the Head of a request whose bytes were not scanned,
// from what Go's parser leaves of it: the version, the method and Host.
// Its size is unknown (0), and nothing of its framing is left.
func ParsedHead(major, minor int, method, host string) Head {
	h := Head{Minor: min(minor, 1), Connect: method == "CONNECT", ContentLength: -1}
	if major != 1 {
		h.Minor = -1
	}
	if host != "" {
		h.Hosts = 1
		for i := 0; i < len(host); i++ {
			h.hostByte(host[i])
		}
	}
	return h
}

// CloseAfter reports whether a connection ends after serving a request
// of HTTP/1.minor with the given framing: a chunked request (it may carry
// a Content-Length a front proxy framed it by, which Go's parser drops:
// RFC 9112 §6.1 allows closing after it), and an HTTP/1.0 request with a
// body (its framing is Content-Length alone, with no chunked to fall back
// on, and a 1.0 front proxy may not expect the connection to be reused).
func CloseAfter(minor int, chunked bool, contentLength int64) bool {
	return chunked || minor == 0 && contentLength != 0
}

// ValidHost reports whether s is a Host field value floodgate accepts:
// host [":" port], where host is a name of letters, digits, "-", ".", "_"
// and "~" (RFC 3986's unreserved characters; no percent-encoding, no
// sub-delimiters such as "," or ";", which other parsers split on), of at
// most 253 bytes; or an IPv4 address; or an IPv6 address in brackets,
// with a zone as "%25zone" (RFC 6874); and port is 1 to 5 digits, at most
// 65535. The empty string is not valid.
func ValidHost(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		host, port = s[:end+1], s[end+1:]
		if port != "" {
			if port[0] != ':' {
				return false
			}
			port = port[1:]
			if port == "" {
				return false
			}
		}
		if !validIPLiteral(host[1 : len(host)-1]) {
			return false
		}
	} else {
		// One pass: the name up to a colon, then the port.
		i := 0
		for i < len(s) && regNameChars[s[i]] {
			i++
		}
		if i == 0 || i > 253 {
			return false
		}
		if i < len(s) {
			if s[i] != ':' || i+1 == len(s) {
				return false
			}
			port = s[i+1:]
		}
	}
	return port == "" || ValidPort(port)
}

// regNameChars: RFC 3986's unreserved characters.
var regNameChars = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
	}
	return t
}()

// ValidPort reports whether p is a decimal port of one to five digits,
// at most 65535.
func ValidPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// validRegName: a reg-name of unreserved characters, or an IPv4 address
// (which is one too).
func validRegName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !regNameChars[h[i]] {
			return false
		}
	}
	return true
}

// validIPLiteral: an IPv6 address, with an optional "%25" zone of
// unreserved characters.
func validIPLiteral(s string) bool {
	addr, zone, hasZone := strings.Cut(s, "%25")
	if hasZone && (zone == "" || !validRegName(zone)) {
		return false
	}
	if strings.IndexByte(addr, '%') >= 0 {
		return false
	}
	a, err := netip.ParseAddr(addr)
	return err == nil && a.Is6()
}
