// Package httpsyntax holds the small pieces of HTTP grammar that several
// of floodgate's parsers share. It imports the standard library only, so
// the public packages may use it.
package httpsyntax

// IsToken reports whether s is a non-empty RFC 9110 token (§5.6.2), the
// grammar of header names, methods and cookie names.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// BearerToken returns the token of an Authorization (or
// Proxy-Authorization) field value of the Bearer scheme (RFC 6750 §2.1),
// and whether v is one. The scheme is matched without regard to case
// (RFC 9110 §11.1: "bearer" and "BEARER" are "Bearer"); one or more
// spaces separate it from the token, as the grammar's 1*SP says (a tab
// does not); whitespace around the whole value is not part of it
// (RFC 9110 §5.5). The token is what RFC 6750 calls b64token, widened to
// any visible ASCII so that a configured secret of other characters still
// matches; a token with a space, tab or control character inside it
// (trailing junk), an empty one, or none at all ("Bearer" alone) is not
// a Bearer credential. It does not allocate.
func BearerToken(v string) (token string, ok bool) {
	v = trimOWS(v)
	const scheme = "Bearer"
	if len(v) <= len(scheme) || v[len(scheme)] != ' ' || !EqualFoldASCII(v[:len(scheme)], scheme) {
		return "", false
	}
	token = v[len(scheme):]
	for len(token) > 0 && token[0] == ' ' {
		token = token[1:]
	}
	if token == "" {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] >= 0x7f {
			return "", false
		}
	}
	return token, true
}

// trimOWS removes optional whitespace (SP, HTAB) at both ends of s.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// EqualFoldASCII reports whether a and b are equal under ASCII case
// folding (strings.EqualFold also folds Unicode: "K" matches U+212A).
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
