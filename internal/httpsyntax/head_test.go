package httpsyntax

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// scan reads head with a HeadScanner, one byte at a time when bytewise
// (heads arrive in pieces), and returns the Head and the bytes it took.
func scan(head string, bytewise bool) (Head, int) {
	var s HeadScanner
	n := 0
	if bytewise {
		for i := 0; i < len(head) && !s.Done(); i++ {
			n += s.WriteString(head[i : i+1])
		}
	} else {
		n = s.WriteString(head)
	}
	if !s.Done() {
		n = -1
	}
	return s.Head, n
}

// refusal is what Refuse says of a head read by a HeadScanner, with the
// target taken as Go's parser takes it.
func refusal(t *testing.T, raw string, max int) int {
	t.Helper()
	h, n := scan(raw, false)
	if n < 0 {
		t.Fatalf("scan(%q): the head did not end", raw)
	}
	var scheme, authority string
	if r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw))); err == nil {
		scheme, authority = Target(r.URL)
	}
	status, _ := h.Refuse(max, scheme, authority)
	return status
}

func TestRefuse(t *testing.T) {
	const max = 4096
	for _, tc := range []struct {
		name string
		raw  string
		want int
	}{
		{"plain", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"empty Host, HTTP/1.0", "GET / HTTP/1.0\nHost:\n\n", 400},
		{"OPTIONS * with an empty Host", "OPTIONS * HTTP/1.0\nHost:\n\n", 400},
		{"HTTP/1.2 as 1.1", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", 0},
		{"HTTP/2.0", "PRI * HTTP/2.0\r\n\r\n", 505},
		{"HTTP/0.9", "GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505},
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", 0},
		{"content-length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", 0},
		{"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 0},
		{"chunked, upper case", "POST / HTTP/1.1\r\nHost: a\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\n", 0},
		{"CL.TE", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"TE.CL", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400},
		{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"TE in HTTP/1.0 with CL", "POST / HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"chunked not last", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
		{"identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 400},
		{"chunked twice", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
		{"chunked on two lines", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"gzip then chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
		{"gzip line then chunked line", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
		{"empty TE", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n", 400},
		{"TE obfuscated with a space inside", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chun ked\r\n\r\n", 400},
		{"TE with a vertical tab", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\x0b\r\n\r\n", 400},
		{"TE quoted", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400},
		{"TE folded", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", 400},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
		{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 501},
		{"CONNECT without Host", "CONNECT a:443 HTTP/1.1\r\n\r\n", 501},
		// The Host field lines are judged first, as Go's server judges them.
		{"CONNECT with a bad Host", "CONNECT a:443 HTTP/1.1\r\nHost: \"\r\n\r\n", 400},
		{"CONNECT with two Hosts", "CONNECT a:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"CONNECT with an empty Host", "CONNECT a:443 HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"no Host, HTTP/1.0", "GET / HTTP/1.0\r\n\r\n", 0},
		{"empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"blank Host", "GET / HTTP/1.1\r\nHost:   \r\n\r\n", 400},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
		{"Host with a comma", "GET / HTTP/1.1\r\nHost: a,b\r\n\r\n", 400},
		{"Host with a slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
		{"Host with userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400},
		{"absolute-form", "GET http://a/p HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"absolute-form, other Host", "GET http://a/p HTTP/1.1\r\nHost: b:8080\r\n\r\n", 0},
		{"absolute-form, no Host", "GET http://a/p HTTP/1.1\r\n\r\n", 400},
		{"absolute-form, invalid Host", "GET http://a/p HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"absolute-form, empty Host", "GET http://a/p HTTP/1.1\r\nHost: \r\n\r\n", 400},
		{"absolute-form, empty authority", "GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"absolute-form, userinfo", "GET http://u@a/p HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"absolute-form, other scheme", "GET ftp://a/p HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"absolute-form, HTTPS", "GET HTTPS://a/p HTTP/1.1\r\nHost: a\r\n\r\n", 0},
		{"at the limit", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", max-32) + "\r\n\r\n", 0},
		{"over the limit", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("a", max-31) + "\r\n\r\n", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusal(t, tc.raw, max); got != tc.want {
				t.Errorf("Refuse(%.200q) = %d, want %d", tc.raw, got, tc.want)
			}
		})
	}
}

func TestHeadScannerFacts(t *testing.T) {
	for _, tc := range []struct {
		raw                  string
		minor, cls, tes, hst int
		cl                   int64
		host                 string
		connect, optionsStar bool
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 1, 0, 0, 1, -1, "a", false, false},
		{"\r\nGET / HTTP/1.0\r\nhost:  a b \r\n\r\n", 0, 0, 0, 1, -1, "a b", false, false},
		{"POST / HTTP/1.1\r\nContent-Length: 12\r\ncontent-length:12 \r\n\r\n", 1, 2, 0, 0, 12, "", false, false},
		{"POST / HTTP/1.1\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n", 1, 2, 0, 0, -1, "", false, false},
		{"POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n", 1, 1, 0, 0, -1, "", false, false},
		{"POST / HTTP/1.1\r\nContent-Length: +12\r\n\r\n", 1, 1, 0, 0, -1, "", false, false},
		{"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 1, 1, 0, 0, -1, "", false, false},
		{"POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", 1, 1, 0, 0, -1, "", false, false},
		{"POST / HTTP/2.0\r\nTransfer-Encoding: chunked\r\n\r\n", -1, 0, 1, 0, -1, "", false, false},
		{"CONNECT a:1 HTTP/1.1\r\n\r\n", 1, 0, 0, 0, -1, "", true, false},
		{"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 1, 0, 0, 1, -1, "a", false, true},
		{"OPTIONS /* HTTP/1.1\r\nHost: a\r\n\r\n", 1, 0, 0, 1, -1, "a", false, false},
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 1, 0, 0, 2, -1, "a", false, false},
		{"GET / HTTP/1.1\r\nX-Host: b\r\nHostx: c\r\n\r\n", 1, 0, 0, 0, -1, "", false, false},
	} {
		for _, bytewise := range []bool{false, true} {
			h, n := scan(tc.raw, bytewise)
			host, _ := h.HostField()
			if n != len(tc.raw) || h.Size != len(tc.raw) || h.Minor != tc.minor || h.ContentLengths != tc.cls ||
				h.TransferEncodings != tc.tes || h.Hosts != tc.hst || h.ContentLength != tc.cl || host != tc.host ||
				h.Connect != tc.connect || h.OptionsStar != tc.optionsStar {
				t.Errorf("scan(%q, bytewise %v) = took %d, %+v (host %q)", tc.raw, bytewise, n, h, host)
			}
		}
	}
}

func TestHeadScannerStopsAtTheHeadsEnd(t *testing.T) {
	head := "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"
	var s HeadScanner
	if n := s.WriteString(head + "abcGET / HTTP/1.1\r\n"); n != len(head) || !s.Done() {
		t.Fatalf("took %d of %d bytes, done %v", n, len(head), s.Done())
	}
	if n := s.WriteString("more"); n != 0 {
		t.Errorf("after the head, took %d bytes", n)
	}
	s.Reset()
	if s.Done() || s.Size != 0 {
		t.Errorf("after Reset: %+v", s.Head)
	}
}

func TestHeadScannerLongHost(t *testing.T) {
	h, _ := scan("GET / HTTP/1.1\r\nHost: "+strings.Repeat("a", 400)+"\r\n\r\n", false)
	if _, ok := h.HostField(); ok {
		t.Error("a 400-byte Host fitted")
	}
	if s, _ := h.Refuse(1<<20, "", ""); s != 400 {
		t.Errorf("a 400-byte Host: %d, want 400", s)
	}
}

// hostileHosts are Host values a client may send to confuse what reads
// the host after floodgate (routing, logs, X-Forwarded-Host, an
// upstream's virtual hosts).
var hostileHosts = []string{
	"", " ", "a b", "a\tb", "a\x00b", "a\r\nX: y", "a,b", "a;b", "a/b", "a\\b", "a?b", "a#b", "u@a", "u:p@a",
	"a:", "a:b", "a:-1", "a:+80", "a:65536", "a:123456", "a:80:80", "::1", "[::1", "::1]", "[::1]x", "[::1]:",
	"[::1]:x", "[a]", "[1.2.3.4]", "[::1%eth0]", "[::1%25]", "[::1%25a/b]", "[v1.x]", "%41", "a%2fb", "é",
	"a\x7f", strings.Repeat("a", 254), "[" + strings.Repeat("1", 300) + "]", "a b:80", "*", "a*",
	"a'b", "a(b)", "a=b", "a$b", "a!b", "a&b", "a+b",
}

func TestValidHost(t *testing.T) {
	for _, s := range []string{
		"a", "example.com", "EXAMPLE.com.", "a-b_c~d", "a:1", "a:65535", "a:08080", "1.2.3.4", "1.2.3.4:80",
		"[::1]", "[::1]:443", "[2001:db8::1]", "[fe80::1%25eth0]", "[::ffff:1.2.3.4]", strings.Repeat("a", 253),
	} {
		if !ValidHost(s) {
			t.Errorf("ValidHost(%q) = false, want true", s)
		}
	}
	for _, s := range hostileHosts {
		if ValidHost(s) {
			t.Errorf("ValidHost(%q) = true, want false", s)
		}
	}
}

func FuzzValidHost(f *testing.F) {
	for _, s := range hostileHosts {
		f.Add(s)
	}
	f.Add("[fe80::1%25eth0]:8080")
	f.Add("example.com:443")
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidHost(s) {
			return
		}
		// What is valid is safe to pass on: a token-like string of
		// unreserved characters, brackets, colons and %25 zones, that
		// Go's own URL parser reads back as the same host.
		for i := 0; i < len(s); i++ {
			if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(",;/\\?#@\"'()=$!&+*", c) >= 0 {
				t.Fatalf("ValidHost(%q) accepts byte %#x", s, c)
			}
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\nHost: " + s + "\r\n\r\n")))
		if err != nil || r.Host != s {
			t.Fatalf("ValidHost(%q) = true, but Go reads Host %q (%v)", s, r.Host, err)
		}
	})
}

// headSeeds are request heads for FuzzHeadScanner.
func headSeeds() []string {
	return []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX",
		"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\nHost: a\nContent-Length: 0\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
		"GET http://a/ HTTP/1.1\r\nHost: b\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3 \r\n\r\nabc",
	}
}

// FuzzHeadScanner holds the scanner to Go's parser on every head Go
// accepts: the same size, the same framing, the same Host; and to itself
// when the head arrives in two pieces.
func FuzzHeadScanner(f *testing.F) {
	for _, s := range headSeeds() {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, raw string, cut int) {
		whole, n := scan(raw, false)
		var s HeadScanner
		if cut = max(0, min(cut, len(raw))); true {
			s.WriteString(raw[:cut])
			s.WriteString(raw[cut:])
		}
		if s.Head != whole || s.Done() != (n >= 0) {
			t.Fatalf("scan(%q) in two pieces at %d = %+v, whole %+v", raw, cut, s.Head, whole)
		}
		br := bufio.NewReader(strings.NewReader(raw))
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		// Go skips no CR or LF before a request line (its server does).
		if n < 0 {
			t.Fatalf("Go read a head from %q; the scanner found none", raw)
		}
		if took := len(raw) - br.Buffered(); took != n {
			t.Fatalf("Go took %d bytes of %q as the head, the scanner %d", took, raw, n)
		}
		if whole.ObsFold || whole.Connect {
			return // refused whatever its fields say (Refuse)
		}
		switch {
		case len(r.TransferEncoding) > 0 && whole.TransferEncodings == 0:
			t.Fatalf("Go reads %q as chunked; the scanner saw no Transfer-Encoding", raw)
		case whole.TransferEncodings == 0 && r.ContentLength != max(0, whole.ContentLength):
			t.Fatalf("Go reads %q with Content-Length %d; the scanner %d", raw, r.ContentLength, whole.ContentLength)
		case r.URL.Scheme == "" && r.Host != "" && whole.Hosts != 1:
			t.Fatalf("Go reads %q with Host %q; the scanner saw %d", raw, r.Host, whole.Hosts)
		}
		if host, ok := whole.HostField(); ok && r.URL.Scheme == "" && whole.Hosts == 1 && host != r.Host {
			t.Fatalf("Go reads %q with Host %q; the scanner %q", raw, r.Host, host)
		}
	})
}

// BenchmarkRefuseHost is what floodgate's server adds to a plain request
// (RefuseSize and RefuseHost, in place of the former Host check).
func BenchmarkRefuseHost(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if s, _ := RefuseSize(180, 64<<10); s != 0 {
			b.Fatal(s)
		}
		if s, _ := RefuseHost(1, 1, "api.openverse.example:8080", "", ""); s != 0 {
			b.Fatal(s)
		}
	}
}

// BenchmarkHeadScanner is the scan of a head that is not plain (a POST
// with a body), as both engines make it.
func BenchmarkHeadScanner(b *testing.B) {
	head := "POST /api/v1/score-sets/search HTTP/1.1\r\nHost: api.example\r\nUser-Agent: curl/8.5\r\n" +
		"Accept: */*\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n"
	var s HeadScanner
	b.ReportAllocs()
	b.SetBytes(int64(len(head)))
	for b.Loop() {
		s.Reset()
		s.WriteString(head)
		if !s.Done() {
			b.Fatal("not done")
		}
	}
}
