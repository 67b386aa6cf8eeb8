package clientip

import (
	"net/netip"
	"strings"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// A walker yields the entries of a forwarding header from the right,
// within the bounds MaxEntries and MaxHeaderBytes. It does not allocate.
type walker struct {
	lines     []string // lines not yet started; the last is next
	rest      string   // the unwalked left part of the current line
	inLine    bool     // rest is valid; otherwise start the next line
	budget    int      // header bytes left to examine
	count     int      // non-empty entries examined
	forwarded bool     // Forwarded syntax rather than X-Forwarded-For
}

// next returns the address of the next non-empty entry. ok is false when
// the walk must end: the header ran out, or the entry is malformed or
// beyond the bounds. Either way the caller keeps its last good address.
func (w *walker) next() (a netip.Addr, ok bool) {
	for {
		if !w.inLine {
			if len(w.lines) == 0 {
				return netip.Addr{}, false
			}
			w.rest = w.lines[len(w.lines)-1]
			w.lines = w.lines[:len(w.lines)-1]
			w.inLine = true
		}
		raw, ok := w.cut()
		if !ok {
			return netip.Addr{}, false
		}
		raw = trimOWS(raw)
		if raw == "" {
			continue
		}
		w.count++
		if w.count > MaxEntries {
			return netip.Addr{}, false
		}
		if w.forwarded {
			return parseForwardedElement(raw)
		}
		return parseNode(raw, false)
	}
}

// cut removes the rightmost entry from w.rest and returns it untrimmed.
// ok is false if the entry does not lie wholly within the byte budget.
func (w *walker) cut() (entry string, ok bool) {
	s := w.rest
	if w.budget <= 0 {
		return "", false
	}
	lo := 0
	if len(s) > w.budget {
		lo = len(s) - w.budget
	}
	var i int
	if w.forwarded {
		i = lastElementComma(s, lo)
	} else {
		i = strings.LastIndexByte(s[lo:], ',')
		if i >= 0 {
			i += lo
		}
	}
	if i < 0 {
		if lo > 0 {
			return "", false // the entry starts before the budget's edge
		}
		w.budget -= len(s) + 1 // the line boundary counts as one byte
		w.inLine = false
		return s, true
	}
	w.budget -= len(s) - i // the entry and its comma
	w.rest = s[:i]
	return s[i+1:], true
}

// lastElementComma returns the index of the last comma in s[lo:] that is
// outside a quoted string, scanning from the right, or -1. A quote is
// escaped when an odd number of backslashes precedes it; for any string
// that parses as a list of Forwarded elements from the left, this finds
// the same boundaries. Each element is then checked from the left.
func lastElementComma(s string, lo int) int {
	quoted := false
	for i := len(s) - 1; i >= lo; i-- {
		switch s[i] {
		case '"':
			if !quoted {
				quoted = true
				continue
			}
			n := 0
			for j := i - 1; j >= lo && s[j] == '\\'; j-- {
				n++
			}
			if n%2 == 0 {
				quoted = false
			}
		case ',':
			if !quoted {
				return i
			}
		}
	}
	return -1
}

// parseForwardedElement returns the address of the for parameter of one
// Forwarded element (RFC 7239 section 4).
func parseForwardedElement(elem string) (netip.Addr, bool) {
	var value string
	found := false
	for elem != "" {
		i, ok := pairEnd(elem)
		if !ok {
			return netip.Addr{}, false
		}
		pair := trimOWS(elem[:i])
		if i < len(elem) {
			elem = elem[i+1:]
		} else {
			elem = ""
		}
		if pair == "" {
			continue
		}
		eq := strings.IndexByte(pair, '=')
		if eq <= 0 || !isToken(pair[:eq]) {
			return netip.Addr{}, false
		}
		name, v := pair[:eq], pair[eq+1:]
		if !strings.EqualFold(name, "for") {
			if !validValue(v) {
				return netip.Addr{}, false
			}
			continue
		}
		if found {
			return netip.Addr{}, false // for twice in one element
		}
		found = true
		value = v
	}
	if !found {
		return netip.Addr{}, false
	}
	if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
		value = value[1 : len(value)-1]
	}
	if strings.ContainsAny(value, `"\`) {
		return netip.Addr{}, false
	}
	return parseNode(value, true)
}

// pairEnd returns the index of the ";" ending the first pair of s, or
// len(s). ok is false if a quoted string is not terminated.
func pairEnd(s string) (int, bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++ // skip the escaped byte
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			return i, true
		}
	}
	return len(s), !quoted
}

// validValue reports whether v is a token-like value (no quotes, no
// whitespace) or exactly one quoted string.
func validValue(v string) bool {
	if v == "" {
		return false
	}
	if v[0] != '"' {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c <= ' ' || c == '"' || c == 0x7f {
				return false
			}
		}
		return true
	}
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i == len(v)-1
		}
	}
	return false
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool { return httpsyntax.IsToken(s) }

// parseNode parses an address with an optional port: "192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:80".
// obfPort allows an RFC 7239 obfuscated port ("_abc"). The result is
// unmapped and without zone; the unspecified addresses are rejected.
func parseNode(s string, obfPort bool) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	host, port, bracketed := s, "", false
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host, port, bracketed = s[1:end], s[end+1:], true
		if port != "" {
			if port[0] != ':' {
				return netip.Addr{}, false
			}
			port = port[1:]
			if port == "" {
				return netip.Addr{}, false
			}
		}
	} else if strings.Count(s, ":") == 1 { // IPv6 has at least two
		i := strings.IndexByte(s, ':')
		host, port = s[:i], s[i+1:]
		if port == "" {
			return netip.Addr{}, false
		}
	}
	// Reject early what cannot be an address ("unknown", "_hidden", names),
	// sparing netip.ParseAddr the allocation of its error.
	if !addrChars(host) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	if bracketed && !a.Is6() || port != "" && !bracketed && !a.Is4() {
		return netip.Addr{}, false
	}
	if port != "" && !validPort(port, obfPort) {
		return netip.Addr{}, false
	}
	a = normalize(a)
	if a.IsUnspecified() {
		return netip.Addr{}, false
	}
	return a, true
}

// validPort reports whether p is a decimal port up to 65535 or, if obf,
// an RFC 7239 obfuscated port.
func validPort(p string, obf bool) bool {
	if obf && len(p) > 1 && p[0] == '_' {
		for i := 1; i < len(p); i++ {
			c := p[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
		return true
	}
	return httpsyntax.ValidPort(p)
}

// addrChars reports whether s is non-empty and made of the characters of
// an IP address, up to a zone ("%eth0") that may follow an IPv6 address.
func addrChars(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%':
			return i > 0 && strings.IndexByte(s[:i], ':') >= 0
		case !isHex(c) && c != ':' && c != '.':
			return false
		}
	}
	return s != ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// normalize unmaps an IPv4-mapped address and drops an IPv6 zone.
func normalize(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// trimOWS trims spaces and tabs.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
