package h1server

// The checks net/http's server makes on a parsed request with
// golang.org/x/net/http/httpguts, written against RFC 9110 here for byte
// slices as well as strings: the plain-request reader checks a head's
// bytes before making strings of them (httpguts takes strings only).

// tokenChars: tchar (RFC 9110 section 5.6.2).
var tokenChars = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func validFieldName[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenChars[s[i]] {
			return false
		}
	}
	return true
}

// validFieldValue: no control characters but horizontal tab (RFC 9110
// section 5.5); bytes from 0x80 are obs-text, allowed.
func validFieldValue[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
