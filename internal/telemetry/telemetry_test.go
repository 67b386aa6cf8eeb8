package telemetry

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
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
		for _, w := range strings.FieldsFunc(out, func(r rune) bool { return strings.ContainsRune(" \t\n,;()\"'", r) }) {
			w = strings.TrimRight(w, ":.")
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
	l := ServerErrorLog(NewLogger(&buf, "info"))
	l.Printf("http: TLS handshake error from %s: EOF", "203.0.113.7:5555")
	if strings.Contains(buf.String(), "203.0.113.7") || !strings.Contains(buf.String(), "[addr]") {
		t.Errorf("log = %s", buf.String())
	}
}
