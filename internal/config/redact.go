package config

import (
	"reflect"
	"strings"
)

// Redacted returns a deep copy of c in which every field tagged
// `secret:"true"` is replaced by "[redacted]" when set, and the password
// of every URL-valued string is masked, so the effective configuration can
// be shown (GET /admin/config) without revealing credentials.
func Redacted(c Config) Config {
	v := reflect.New(reflect.TypeOf(c)).Elem()
	deepCopy(v, reflect.ValueOf(c))
	redact(v, false)
	return v.Interface().(Config)
}

func redact(v reflect.Value, secret bool) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		switch {
		case s == "":
		case secret:
			v.SetString("[redacted]")
		default:
			if masked, ok := maskURLPassword(s); ok {
				v.SetString(masked)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			redact(v.Field(i), v.Type().Field(i).Tag.Get("secret") == "true")
		}
	case reflect.Slice:
		for i := range v.Len() {
			redact(v.Index(i), secret)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			redact(e, secret)
			v.SetMapIndex(k, e)
		}
	}
}

// maskURLPassword replaces the password of a URL-shaped s
// (SCHEME://USER:PASSWORD@HOST…) by "xxxxx", as net/url's URL.Redacted
// and the Redis store's own log lines do. It does not parse s as net/url
// does: the Redis store's URLs hold what net/url refuses (a
// password with "^" or "{", a cluster's several bracketed IPv6 hosts), and
// such a password must be masked all the same. The authority runs to the
// first "/", "?" or "#", and its user information to its last "@" — as
// both net/url and redisstore.ParseURL read it.
func maskURLPassword(s string) (string, bool) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !isScheme(strings.TrimLeft(scheme, " \t\r\n")) {
		return s, false
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return s, false
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return s, false
	}
	return scheme + "://" + user + ":xxxxx@" + authority[at+1:] + tail, true
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, "+", "-" or ".".
func isScheme(s string) bool {
	for i, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// MaskURLCredentials returns the text s (an error, a problem) with the
// password of every URL in it replaced by "xxxxx". A URL's user
// information runs to the last "@" before the end of the URL — a blank, a
// quote, or the end of s — not to the first "/" as a parser reads it: a
// URL that failed to parse is often one whose password holds a "/", a
// "?" or a blank, and its message quotes it whole.
func MaskURLCredentials(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i + len("://")
		// The URL ends at the quote that opened it (not an escaped one,
		// as %q writes), or else at a blank.
		k := strings.LastIndexAny(s[:i], "\"' \t\n")
		quote := byte(0)
		if k >= 0 && (s[k] == '"' || s[k] == '\'') {
			quote = s[k]
		}
		end := start
		for ; end < len(s); end++ {
			c := s[end]
			if c == '\\' && quote != 0 {
				end++
				continue
			}
			if c == '\n' || c == quote || quote == 0 && (c == ' ' || c == '\t' || c == '"' || c == '\'') {
				break
			}
		}
		end = min(end, len(s))
		url := s[start:end]
		b.WriteString(s[:start])
		if at := strings.LastIndexByte(url, '@'); at >= 0 {
			if user, _, ok := strings.Cut(url[:at], ":"); ok {
				url = user + ":xxxxx" + url[at:]
			}
		}
		b.WriteString(url)
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}
