package logs

import "bytes"

// The common log format (Apache "%h %l %u %t \"%r\" %>s %b", nginx's
// default without the last two fields):
//
//	127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
//
// and the combined format, the same followed by "\"%{Referer}i\"
// \"%{User-agent}i\"" (nginx's default "combined"). Anything after those
// fields is ignored, so logs with extra fields appended (nginx's
// $http_x_forwarded_for, a request time) read as combined or common.
//
// Apache's vhost_combined (Debian's other_vhosts_access.log) is
// combined after "%v:%p", the virtual host's name and the port:
//
//	www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"
//
// Read as combined, such a line would give the virtual host as the
// client, one client for a whole site. A line whose first field is not
// an IP address and second is does not parse as common or combined: its
// second field would be the ident (%l), which is "-" or a user name.

// timeCache remembers the last timestamp parsed: consecutive lines of a
// busy log share it.
type timeCache struct {
	raw [32]byte
	n   int
	t   int64
}

func (c *timeCache) parse(b []byte, parse func([]byte) (int64, bool)) (int64, bool) {
	if len(b) == c.n && c.n > 0 && bytes.Equal(b, c.raw[:c.n]) {
		return c.t, true
	}
	t, ok := parse(b)
	if ok && len(b) <= len(c.raw) {
		c.n = copy(c.raw[:], b)
		c.t = t
	}
	return t, ok
}

// quoted returns the contents of the double-quoted field at b[i] (which
// must be '"'), honouring backslash escapes (Apache writes \" and \\; nginx
// writes \x22), and the index just past the closing quote.
func quoted(b []byte, i int) (field []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	start := i + 1
	for j := start; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return b[start:j], j + 1, true
		}
	}
	return nil, 0, false
}

// splitRequest splits a request line "GET /path HTTP/1.1" into method and
// target. A line of another shape gives empty ones: the request was still
// made, by a client that sent something other than HTTP.
func splitRequest(req []byte) (method, target []byte) {
	sp := bytes.IndexByte(req, ' ')
	if sp <= 0 {
		return nil, nil
	}
	method, rest := req[:sp], req[sp+1:]
	for _, c := range method {
		if c < 'A' || c > 'Z' {
			if c != '-' && c != '_' && (c < 'a' || c > 'z') {
				return nil, nil
			}
		}
	}
	if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
		rest = rest[:sp]
	}
	if len(rest) == 0 {
		return nil, nil
	}
	return method, rest
}

// parseCLF parses a common (combined false) or combined line into r.
func parseCLF(r *Record, line []byte, combined bool, tc *timeCache) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	r.Client = line[:sp]
	// ident and user, then the time: the first "[…]" after a space that
	// holds a valid time and is followed by ` "`, the request's opening
	// quote. The user name (%u, nginx's $remote_user, which nginx fills
	// from any Authorization header) is logged as sent, spaces and
	// brackets included, so it may hold what looks like a time; but not
	// a bare '"' (Apache writes \", nginx \x22), so no "[…]" in it is
	// followed by ` "` and the first candidate is the time. The last one
	// would do as well, but costs a scan of the whole line and trusts
	// the fields after the time instead. (A log written without escapes,
	// nginx's escape=none, lets a user name forge its line either way.)
	i := sp
	for {
		lb := bytes.IndexByte(line[i+1:], '[')
		if lb < 0 {
			return false
		}
		i += 1 + lb
		if i+30 > len(line) {
			return false // and so would every later "["
		}
		if line[i-1] == ' ' && line[i+27] == ']' && line[i+28] == ' ' && line[i+29] == '"' {
			if t, ok := tc.parse(line[i+1:i+27], parseCLFTime); ok {
				r.Time = t
				break
			}
		}
	}
	if i > sp+1 {
		second := line[sp+1 : i-1]
		if end := bytes.IndexByte(second, ' '); end >= 0 {
			second = second[:end]
		}
		if isIP(second) && !isIP(r.Client) {
			return false // a virtual host before the client
		}
	}
	req, i, ok := quoted(line, i+29)
	if !ok {
		return false
	}
	r.Method, r.Target = splitRequest(req)
	// " 200 2326"
	if i+5 > len(line) || line[i] != ' ' {
		return false
	}
	st := digits(line[i+1 : i+4])
	if st < 0 || line[i+4] != ' ' {
		return false
	}
	r.Status = st
	i += 5
	end := bytes.IndexByte(line[i:], ' ')
	if end < 0 {
		end = len(line) - i
	}
	switch size := line[i : i+end]; {
	case len(size) == 1 && size[0] == '-':
		r.Bytes = 0
	default:
		n, ok := bigDigits(size)
		if !ok {
			return false
		}
		r.Bytes = n
	}
	i += end
	if !combined {
		return true
	}
	if i+2 > len(line) || line[i] != ' ' {
		return false
	}
	if _, i, ok = quoted(line, i+1); !ok { // referer
		return false
	}
	if i+2 > len(line) || line[i] != ' ' {
		return false
	}
	ua, _, ok := quoted(line, i+1)
	if !ok {
		return false
	}
	r.HasUserAgent = true
	if len(ua) == 1 && ua[0] == '-' {
		ua = ua[:0]
	}
	r.UserAgent = ua
	return true
}

// parseVhostCombined parses a vhost_combined line into r: "%v:%p", then
// a combined line. Its Host is the virtual host's name.
func parseVhostCombined(r *Record, line []byte, tc *timeCache) bool {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	host, ok := vhostName(line[:sp])
	if !ok || !parseCLF(r, line[sp+1:], true, tc) {
		return false
	}
	// %h is never "-": this is a combined line whose client is logged
	// with its port (nginx's "$remote_addr:$remote_port"), not a host.
	if len(r.Client) == 1 && r.Client[0] == '-' {
		return false
	}
	r.Host = host
	return true
}

// vhostName returns the name of "%v:%p": a host name or IPv4 address, or
// an IPv6 address in brackets, then a colon and a port of one to five
// digits. An unbracketed name with a colon is the IPv6 client of a
// common or combined line ("2001:db8::1"), not a virtual host.
func vhostName(b []byte) ([]byte, bool) {
	colon := bytes.LastIndexByte(b, ':')
	if colon <= 0 || len(b)-colon-1 > 5 || digits(b[colon+1:]) < 0 {
		return nil, false
	}
	host := b[:colon]
	if host[0] == '[' {
		if len(host) < 3 || host[len(host)-1] != ']' {
			return nil, false
		}
		return host[1 : len(host)-1], true
	}
	if bytes.IndexByte(host, ':') >= 0 {
		return nil, false
	}
	return host, true
}

// isIP reports whether b is an IP address as netip.ParseAddr reads one,
// without the string conversion and the error values that would cost an
// allocation a line.
func isIP(b []byte) bool {
	for _, c := range b {
		switch c {
		case '.':
			return isIPv4(b)
		case ':':
			return isIPv6(b)
		case '%':
			return false
		}
	}
	return false
}

// isIPv4 reports whether b is four dot-separated decimal numbers up to
// 255, without leading zeros.
func isIPv4(b []byte) bool {
	fields, val, n := 0, 0, 0 // n: the digits of the current field
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '.' {
			if n == 0 {
				return false
			}
			fields++
			val, n = 0, 0
			continue
		}
		c := b[i]
		if c < '0' || c > '9' || (n == 1 && val == 0) {
			return false
		}
		val = val*10 + int(c-'0')
		n++
		if val > 255 {
			return false
		}
	}
	return fields == 4
}

// isIPv6 reports whether b is an IPv6 address: eight groups of up to four
// hex digits, the last two of which may be an IPv4 address, "::" standing
// for one or more groups of zeros, and an optional non-empty "%zone".
func isIPv6(b []byte) bool {
	if z := bytes.IndexByte(b, '%'); z >= 0 {
		if z == len(b)-1 {
			return false
		}
		b = b[:z]
	}
	ellipsis := false
	if len(b) >= 2 && b[0] == ':' && b[1] == ':' {
		ellipsis = true
		b = b[2:]
		if len(b) == 0 {
			return true
		}
	}
	n := 0 // bytes of the address given
	for n < 16 {
		off := 0
		for off < len(b) && isHex(b[off]) {
			if off == 4 {
				return false
			}
			off++
		}
		if off == 0 {
			return false
		}
		if off < len(b) && b[off] == '.' {
			// The last 32 bits, as an IPv4 address.
			if ellipsis {
				return n+4 < 16 && isIPv4(b)
			}
			return n == 12 && isIPv4(b)
		}
		n += 2
		b = b[off:]
		if len(b) == 0 {
			break
		}
		if b[0] != ':' || len(b) == 1 {
			return false
		}
		b = b[1:]
		if b[0] == ':' {
			if ellipsis {
				return false
			}
			ellipsis = true
			b = b[1:]
			if len(b) == 0 {
				break
			}
		}
	}
	if len(b) != 0 {
		return false
	}
	// "::" must stand for at least one group.
	return ellipsis == (n < 16)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// bigDigits parses up to 18 decimal digits.
func bigDigits(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
