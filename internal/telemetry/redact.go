package telemetry

import (
	"bytes"
	"hash/fnv"
	"io"
	"log"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RedactingWriter returns a writer that replaces every IP address (with or
// without a port) in what it is given by "[addr]" before passing it to w.
// net/http's server error log names client addresses ("TLS handshake
// error from 203.0.113.7:41234"); floodgate's logs never do.
func RedactingWriter(w io.Writer) io.Writer { return redactor{w} }

type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	if _, err := r.w.Write(Redact(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Redact returns p with every word that parses as an IP address or
// address:port replaced by "[addr]". Words end at blanks, punctuation,
// "=", "/", "<", ">" (the arrow of Go's "read tcp LOCAL->REMOTE" errors)
// and lose a trailing ":", "." or "-", so an address is found whatever
// surrounds it.
func Redact(p []byte) []byte {
	var out bytes.Buffer
	for len(p) > 0 {
		i := bytes.IndexAny(p, redactSeparators)
		word, sep := p, []byte(nil)
		if i >= 0 {
			word, sep, p = p[:i], p[i:i+1], p[i+1:]
		} else {
			p = nil
		}
		trim := bytes.TrimRight(word, ":.-")
		if isAddr(string(trim)) {
			out.WriteString("[addr]")
			out.Write(word[len(trim):])
		} else {
			out.Write(word)
		}
		out.Write(sep)
	}
	return out.Bytes()
}

// redactSeparators end the words Redact looks at.
const redactSeparators = " \t\n,;()\"'<>=/"

func isAddr(s string) bool {
	if s == "" {
		return false
	}
	if _, err := netip.ParseAddrPort(s); err == nil {
		return true
	}
	s = trimBrackets(s)
	_, err := netip.ParseAddr(s)
	return err == nil
}

func trimBrackets(s string) string {
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// ServerErrorLog returns a *log.Logger for http.Server.ErrorLog that writes
// each message through lim as a warning "http server", with IP addresses
// redacted and quoted client bytes masked (MaskQuoted), at most one line
// per kind of message per interval: every scanner that drops a TLS
// handshake or idles past the header timeout makes one, so a line each
// would let any client fill the log. Flushing lim at exit writes the
// messages counted since their last line.
func ServerErrorLog(lim *LogLimiter) *log.Logger {
	return log.New(RedactingWriter(slogWriter{lim}), "", 0)
}

type slogWriter struct{ lim *LogLimiter }

// serverErrorKinds bounds the keys of the server's lines: its messages
// carry error texts that the client chose in part.
const serverErrorKinds = 32

func (w slogWriter) Write(p []byte) (int, error) {
	msg := MaskQuoted(strings.TrimSpace(string(p)))
	// The kind: the message without its numbers (ports, record
	// versions), hashed into a bounded set of keys.
	h := fnv.New32a()
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c < '0' || c > '9' {
			h.Write([]byte{c})
		}
	}
	key := "http server\x1f" + strconv.Itoa(int(h.Sum32()%serverErrorKinds))
	w.lim.Log(key, slog.LevelWarn, "http server", slog.String("error", msg))
	return len(p), nil
}

// MaskQuoted returns s with the contents of every double-quoted part
// replaced by "…": Go's errors quote (%q) the bytes they failed on, and
// those are a client's (a header's value, a request line).
func MaskQuoted(s string) string {
	if !strings.Contains(s, `"`) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		// The closing quote: the next one not escaped.
		j := 0
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		b.WriteString("…")
		if j >= len(s) {
			return b.String()
		}
		b.WriteByte('"')
		s = s[j+1:]
	}
	b.WriteString(s)
	return b.String()
}

// RuleErrorText is what a log line says of a rule's condition or key that
// failed to evaluate. CEL's runtime errors name the value they failed on
// ("no such key: " followed by a cookie, an address or an API key;
// `invalid RFC 3339 timestamp "…"` with a header's value), and that value
// is the client's: the line keeps the error's text up to its first ": "
// and masks anything quoted, which says what failed and not on what.
func RuleErrorText(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i >= 0 {
		s = s[:i]
	}
	const max = 120
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return MaskQuoted(s)
}
