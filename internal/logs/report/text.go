package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printf is fmt.Fprintf with every string argument escaped for a
// terminal (see text). The formats are the tables' own, with the tabs
// and newlines that make rows and columns; the arguments may come from
// logs, which anyone who can send a request writes into.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = text(s)
		}
	}
	fmt.Fprintf(w, format, args...)
}

// text returns s as it can be shown on a terminal: control characters
// and other characters that are not printable (tabs, newlines, escape
// sequences, bidirectional overrides, zero-width spaces), bytes that are
// not UTF-8, and backslashes are escaped as Go escapes them in a string
// literal: "\x1b", "\r", "\u202e", "\xff", "\\". A request path such as
// "/a%1b]0;title%07" then cannot set the terminal's title, clear its
// screen, move its cursor or add a row to a table, and what is shown
// reads back to the logged bytes (strconv.Unquote of it, quoted).
func text(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// plain reports whether s is printable ASCII without backslashes: what
// nearly every logged string is, shown as it is.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '\\' {
			return false
		}
	}
	return true
}
