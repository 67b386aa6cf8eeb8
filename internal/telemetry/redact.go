package telemetry

import (
	"bytes"
	"io"
	"log"
	"log/slog"
	"net/netip"
	"strings"
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
// address:port replaced by "[addr]".
func Redact(p []byte) []byte {
	var out bytes.Buffer
	for len(p) > 0 {
		i := bytes.IndexAny(p, " \t\n,;()\"'")
		word, sep := p, []byte(nil)
		if i >= 0 {
			word, sep, p = p[:i], p[i:i+1], p[i+1:]
		} else {
			p = nil
		}
		trim := bytes.TrimRight(word, ":.")
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
// each message to l as a warning, with IP addresses redacted.
func ServerErrorLog(l *slog.Logger) *log.Logger {
	return log.New(RedactingWriter(slogWriter{l}), "", 0)
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn("http server", "error", strings.TrimSpace(string(p)))
	return len(p), nil
}
