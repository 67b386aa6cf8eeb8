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
