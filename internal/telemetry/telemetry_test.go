package telemetry

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

var redactTests = []struct{ in, want string }{
	{"http: TLS handshake error from 203.0.113.7:41234: EOF", "http: TLS handshake error from [addr]: EOF"},
	{"from [2001:db8::1]:443 reset", "from [addr] reset"},
	{"peer 2001:db8::1, again", "peer [addr], again"},
	{"address 192.0.2.1.", "address [addr]."},
	{`{"ip":"198.51.100.4"}`, `{"ip":"[addr]"}`},
	{"no address here: 1.2.3 or 1.2.3.4.5 or v1.2", "no address here: 1.2.3 or 1.2.3.4.5 or v1.2"},
	{"", ""},
	{"addr ::1", "addr [addr]"},
	{"read tcp 127.0.0.1:23443->127.0.0.77:50891: read: connection reset by peer", "read tcp [addr]->[addr]: read: connection reset by peer"},
	{"read tcp [::1]:23444->[::1]:56554: i/o timeout", "read tcp [addr]->[addr]: i/o timeout"},
	{"peer=203.0.113.9 via http://192.0.2.1/x <2001:db8::7>", "peer=[addr] via http://[addr]/x <[addr]>"},
	{"a-b->c: 10.0.0.1-", "a-b->c: [addr]-"},
}

func TestRedact(t *testing.T) {
	for _, tc := range redactTests {
		if got := string(Redact([]byte(tc.in))); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRedact: no word of the output parses as an IP address, and text
// without addresses passes through unchanged.
func FuzzRedact(f *testing.F) {
	for _, tc := range redactTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := string(Redact([]byte(s)))
		for _, w := range strings.FieldsFunc(out, func(r rune) bool { return strings.ContainsRune(redactSeparators, r) }) {
			w = strings.TrimRight(w, ":.-")
			if _, err := netip.ParseAddr(w); err == nil {
				t.Fatalf("Redact(%q) = %q still holds address %q", s, out, w)
			}
		}
	})
}

func TestKeyHasher(t *testing.T) {
	a, b := NewKeyHasher("secret"), NewKeyHasher("secret")
	if a.Hash([]byte("k")) != b.Hash([]byte("k")) {
		t.Error("same secret, different hashes")
	}
	if a.Hash([]byte("k")) == a.Hash([]byte("k2")) {
		t.Error("different keys, same hash")
	}
	if NewKeyHasher("other").Hash([]byte("k")) == a.Hash([]byte("k")) {
		t.Error("different secrets, same hash")
	}
	if h := a.Hash([]byte("rule\x1fip\x1f192.0.2.1")); len(h) != 16 || strings.Contains(h, "192") {
		t.Errorf("hash %q: want 16 hex digits", h)
	}
}

func TestServerErrorLogRedacts(t *testing.T) {
	var buf bytes.Buffer
	l := ServerErrorLog(NewLogLimiter(NewLogger(&buf, "info"), LogLimiterOptions{}))
	l.Printf("http: TLS handshake error from %s: EOF", "203.0.113.7:5555")
	if strings.Contains(buf.String(), "203.0.113.7") || !strings.Contains(buf.String(), "[addr]") {
		t.Errorf("log = %s", buf.String())
	}
}

// Every scanner that drops a handshake makes a server error: one line a
// kind of message per interval, whatever the ports, and the quoted bytes
// a client sent never reach the log.
func TestServerErrorLogLimited(t *testing.T) {
	var buf bytes.Buffer
	lim := NewLogLimiter(NewLogger(&buf, "info"), LogLimiterOptions{AfterFunc: func(time.Duration, func()) {}})
	l := ServerErrorLog(lim)
	for port := 40000; port < 40100; port++ {
		l.Printf("http: TLS handshake error from 203.0.113.7:%d: read tcp 127.0.0.1:443->203.0.113.7:%d: read: connection reset by peer", port, port)
	}
	l.Printf(`http2: server: error reading preface from client 203.0.113.7:5: bogus greeting "GET /?token=s3cr3t HTTP/1.1"`)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 100 resets of one kind and one other message, want 2:\n%s", len(lines), buf.String())
	}
	if strings.Contains(buf.String(), "s3cr3t") || !strings.Contains(lines[1], `bogus greeting \"…\"`) {
		t.Errorf("the client's quoted bytes are not masked:\n%s", lines[1])
	}
	// At exit the limiter is flushed: the 99 resets counted since the
	// first line are written, not lost.
	lim.Flush(true)
	if !strings.Contains(buf.String(), `"count":99`) {
		t.Errorf("the flush at exit does not write the resets counted:\n%s", buf.String())
	}
}

func TestRuleErrorText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"no such key: ovSession=SESSCOOKIE-zq9x", "no such key"},
		{"no such key: 2001:db8::77", "no such key"},
		{`invalid RFC 3339 timestamp "DATEVAL-abc"`, `invalid RFC 3339 timestamp "…"`},
		{`strconv.ParseInt: parsing "APIKEY": invalid syntax`, "strconv.ParseInt"},
		{"type conversion error from 'string' to 'int'", "type conversion error from 'string' to 'int'"},
		{`unterminated "quote`, `unterminated "…`},
		{`escaped "a\"b" end`, `escaped "…" end`},
		{strings.Repeat("é", 100), strings.Repeat("é", 60) + "…"},
	} {
		if got := RuleErrorText(errors.New(tc.in)); got != tc.want {
			t.Errorf("RuleErrorText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRuleErrorText: nothing quoted and nothing after the first ": "
// survives.
func FuzzRuleErrorText(f *testing.F) {
	f.Add(`no such key: x`)
	f.Add(`bad "v\"al" here`)
	f.Fuzz(func(t *testing.T, s string) {
		out := RuleErrorText(errors.New(s))
		if strings.Contains(out, ": ") {
			t.Fatalf("RuleErrorText(%q) = %q keeps what follows \": \"", s, out)
		}
		parts := strings.Split(out, `"`)
		for i := 1; i < len(parts); i += 2 {
			if parts[i] != "…" {
				t.Fatalf("RuleErrorText(%q) = %q keeps quoted %q", s, out, parts[i])
			}
		}
	})
}
