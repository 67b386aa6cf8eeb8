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
