package h1server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// plainHeads are heads readPlainRequest takes itself.
var plainHeads = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /api/v1/score-sets/urn:mavedb:00000001-a-1 HTTP/1.1\r\nHost: localhost:8080\r\n\r\n",
	"GET /search?q=cats&page=2 HTTP/1.1\r\nHost: example.org\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n",
	"HEAD /x HTTP/1.0\r\n\r\n",
	"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
	"GET /x HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\nHost: h\r\n\r\n",
	"GET /x HTTP/1.1\r\nhost: h\r\nuser-agent: lower\r\nx-forwarded-for: 1.2.3.4\r\nX-FORWARDED-FOR: 5.6.7.8\r\n\r\n",
	"DELETE /a%20b/%2F?x=%ZZ HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nX-Spaces:  \t v \t \r\n\r\n",
	"OPTIONS /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n",
	"GET /x#frag HTTP/1.1\r\nHost: h\r\nA: \"quoted, with commas\"\r\n\r\nGET /next HTTP/1.1\r\n",
	"X-CUSTOM~METHOD /x HTTP/1.1\r\nHost: [::1]:80\r\nWeird_Name.2!: v\r\n\r\n",
	"GET //double//slashes/../x HTTP/1.1\r\nHost: h\r\n\r\n",
	"GET / HTTP/1.1\r\n\r\n" + strings.Repeat("x", 10), // the next request's bytes
}

// otherHeads are heads left to http.ReadRequest, which reads some of
// them (differently or with its rewrites) and refuses the others.
var otherHeads = []string{
	"",
	"GET / HTTP/1.1\r\nHost: a\r\n",   // not whole yet
	"GET / HTTP/1.1\nHost: a\n\n",     // bare LF
	"GET / HTTP/1.1\r\nHost: a\n\r\n", // bare LF in a field
	"GET / HTTP/1.1\r\nA: b\r\n c\r\nHost: a\r\n\r\n",        // obs-fold
	"GET / HTTP/1.1\r\n A: b\r\nHost: a\r\n\r\n",             // leading space
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", // framing
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nTrailer: X\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n", // net/http adds Cache-Control
	"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n",          // two Hosts
	"GET http://a/x HTTP/1.1\r\nHost: b\r\n\r\n",            // absolute form
	"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",                 // asterisk form
	"CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",             // authority form
	"CONNECT /rpc HTTP/1.1\r\nHost: a\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.2\r\nHost: a\r\n\r\n",
	"GET / http/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
	"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
	"G(T / HTTP/1.1\r\nHost: a\r\n\r\n",
	" GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n", // obs-text
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\x7fb\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", // bare CR
	"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX : b\r\n\r\n", // space before colon
	"GET / HTTP/1.1\r\nHost: a\r\nX\r\n\r\n",     // no colon
	"GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n",   // no name
	"GET / HTTP/1.1\r\nHost: a\r\nX(: b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\r\r\n",
	"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", // not a URL
	"\r\n\r\n",
}

// checkAgainstReadRequest reads data with readPlainRequest and with
// http.ReadRequest, and fails unless readPlainRequest either consumed
// nothing, or returned what http.ReadRequest returns and left the same
// bytes unread. It reports whether readPlainRequest took the head.
func checkAgainstReadRequest(t *testing.T, data []byte) bool {
	t.Helper()
	return checkAgainstReadRequestWith(t, data, nil)
}

// checkAgainstReadRequestWith is checkAgainstReadRequest with the URL,
// header and values of b reused, as a connection's next request does.
func checkAgainstReadRequestWith(t *testing.T, data []byte, b *headBuffers) bool {
	t.Helper()
	br := bufio.NewReaderSize(bytes.NewReader(data), 4<<10)
	br.Peek(1) // as serveOne does: the buffer filled
	var got http.Request
	took := readPlainRequestInto(br, &got, b)
	rest, _ := io.ReadAll(br)

	ref := bufio.NewReaderSize(bytes.NewReader(data), 4<<10)
	want, err := http.ReadRequest(ref)
	if !took {
		if !bytes.Equal(rest, data) {
			t.Fatalf("%q: not taken, yet %d bytes consumed", data, len(data)-len(rest))
		}
		return false
	}
	if err != nil {
		t.Fatalf("%q: taken, but http.ReadRequest says %v", data, err)
	}
	wantRest, _ := io.ReadAll(ref)
	if !bytes.Equal(rest, wantRest) {
		t.Fatalf("%q: left %q unread, http.ReadRequest %q", data, rest, wantRest)
	}
	same := func(what string, a, b any) {
		t.Helper()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: %s = %#v, http.ReadRequest has %#v", data, what, a, b)
		}
	}
	same("Method", got.Method, want.Method)
	same("URL", got.URL, want.URL)
	same("Proto", got.Proto, want.Proto)
	same("ProtoMajor", got.ProtoMajor, want.ProtoMajor)
	same("ProtoMinor", got.ProtoMinor, want.ProtoMinor)
	same("Header", got.Header, want.Header)
	same("Host", got.Host, want.Host)
	same("Close", got.Close, want.Close)
	same("ContentLength", got.ContentLength, want.ContentLength)
	same("TransferEncoding", got.TransferEncoding, want.TransferEncoding)
	same("Trailer", got.Trailer, want.Trailer)
	same("RequestURI", got.RequestURI, want.RequestURI)
	same("Body is NoBody", got.Body == http.NoBody, want.Body == http.NoBody)
	same("Body", got.Body, http.NoBody)
	// The whole request, so that a field added to http.Request and set
	// by http.ReadRequest does not go unnoticed.
	got.Body, want.Body = nil, nil
	same("request", got, *want)
	// checkRequest skips the name and value checks for these.
	for k, vv := range got.Header {
		if !validFieldName(k) {
			t.Fatalf("%q: name %q taken", data, k)
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				t.Fatalf("%q: value %q taken", data, v)
			}
		}
	}
	return true
}

func TestPlainRequestAsReadRequest(t *testing.T) {
	for _, h := range plainHeads {
		if !checkAgainstReadRequest(t, []byte(h)) {
			t.Errorf("%q: left to http.ReadRequest, want read as plain", h)
		}
	}
	for _, h := range otherHeads {
		if checkAgainstReadRequest(t, []byte(h)) {
			t.Errorf("%q: read as plain, want left to http.ReadRequest", h)
		}
	}
}

// A connection reuses the URL, header map and values of its last request
// (headBuffers): whatever came before, a head reads as http.ReadRequest
// reads it, with nothing left over from the one before.
func TestPlainRequestReusedBuffers(t *testing.T) {
	heads := append(append([]string{}, plainHeads...), otherHeads...)
	for _, first := range heads {
		for _, second := range heads {
			b := new(headBuffers)
			checkAgainstReadRequestWith(t, []byte(first), b)
			checkAgainstReadRequestWith(t, []byte(second), b)
			b.empty()
			if len(b.header) != 0 || b.url != (url.URL{}) || slices.ContainsFunc(b.vals, func(v string) bool { return v != "" }) {
				t.Fatalf("after %q, %q: empty left %v %v %q", first, second, b.header, b.url, b.vals)
			}
		}
	}
}

// dirtyBuffers are a connection's buffers after a head with many fields.
func dirtyBuffers(t *testing.T) *headBuffers {
	b := new(headBuffers)
	head := "GET /old?q=1 HTTP/1.1\r\nHost: old\r\nA: 1\r\nB: 2\r\nC: 3\r\nA: 4\r\nCookie: x=1\r\n" +
		"X-Forwarded-For: 192.0.2.1\r\nUser-Agent: old\r\nAccept: */*\r\n\r\n"
	if !checkAgainstReadRequestWith(t, []byte(head), b) {
		t.Fatal("the dirtying head was not read as plain")
	}
	return b
}

// A head that does not fit the reader's buffer is net/http's.
func TestPlainRequestLongHead(t *testing.T) {
	h := "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 5000) + "\r\n\r\n"
	if checkAgainstReadRequest(t, []byte(h)) {
		t.Fatal("a head longer than the buffer was read as plain")
	}
}

// Through the whole server, each plain head gets net/http's server's
// answer (compare_test.go holds the rest).
func TestPlainRequestThroughServer(t *testing.T) {
	heads := append([]string{
		"GET /x HTTP/1.1\r\n\r\n", // no Host: 400
		"GET /x HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET /x HTTP/1.1\r\nConnection: close\r\nHost: h\r\n\r\nGET /y HTTP/1.1\r\nHost: h\r\n\r\n",
	}, plainHeads...)
	for i, h := range heads {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			// Whole requests only: the probe sent after them must not be
			// taken for the rest of one.
			h = h[:strings.LastIndex(h, "\r\n\r\n")+4]
			tc := cmpCase{name: fmt.Sprint(i), in: h, n: strings.Count(h, "\r\n\r\n")}
			if strings.Contains(h, " HTTP/1.0\r\n") && !strings.Contains(h, "keep-alive") {
				// The difference compare_test.go's http10-no-keepalive
				// asserts: "Connection: close" where net/http sends none.
				tc.ignore = []string{"header:Connection"}
			}
			tc.run(t)
		})
	}
}

func FuzzPlainRequest(f *testing.F) {
	for _, h := range plainHeads {
		f.Add([]byte(h))
	}
	for _, h := range otherHeads {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReadRequest(t, data)
		checkAgainstReadRequestWith(t, data, dirtyBuffers(t))
	})
}

// The plain path allocates a handful of objects where http.ReadRequest
// allocates for every line.
func TestPlainRequestAllocations(t *testing.T) {
	head := []byte("GET /api/v1/score-sets/urn:mavedb:00000001-a-1?x=1 HTTP/1.1\r\nHost: localhost:8080\r\n" +
		"User-Agent: Mozilla/5.0\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n")
	rd := bytes.NewReader(head)
	br := bufio.NewReaderSize(rd, 4<<10)
	allocs := testing.AllocsPerRun(200, func() {
		rd.Reset(head)
		br.Reset(rd)
		br.Peek(1)
		var req http.Request
		if !readPlainRequest(br, &req) {
			t.Fatal("not read as plain")
		}
	})
	// The head's string, the values' slice, the map and its group, the
	// URL.
	if allocs > 5 {
		t.Fatalf("%v allocations a request, want at most 5", allocs)
	}
	// A connection's next request reuses all but the head's string.
	b := new(headBuffers)
	allocs = testing.AllocsPerRun(200, func() {
		rd.Reset(head)
		br.Reset(rd)
		br.Peek(1)
		var req http.Request
		if !readPlainRequestInto(br, &req, b) {
			t.Fatal("not read as plain")
		}
	})
	if allocs > 1 {
		t.Fatalf("%v allocations a request with the buffers reused, want at most 1", allocs)
	}
}

func BenchmarkReadRequest(b *testing.B) {
	head := []byte("GET /api/v1/score-sets/urn:mavedb:00000001-a-1?x=1 HTTP/1.1\r\nHost: localhost:8080\r\n" +
		"User-Agent: Mozilla/5.0\r\nAccept: */*\r\nAccept-Encoding: gzip\r\nX-Forwarded-For: 192.0.2.1\r\n\r\n")
	rd := bytes.NewReader(head)
	br := bufio.NewReaderSize(rd, 4<<10)
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(head)
			br.Reset(rd)
			br.Peek(1)
			var req http.Request
			if !readPlainRequest(br, &req) {
				b.Fatal("not plain")
			}
		}
	})
	b.Run("plain-reused", func(b *testing.B) {
		b.ReportAllocs()
		hb := new(headBuffers)
		for b.Loop() {
			rd.Reset(head)
			br.Reset(rd)
			br.Peek(1)
			var req http.Request
			if !readPlainRequestInto(br, &req, hb) {
				b.Fatal("not plain")
			}
			hb.empty()
		}
	})
	b.Run("net-http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(head)
			br.Reset(rd)
			if _, err := http.ReadRequest(br); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPartialHeadHasHeaderTimeout: a head that has not arrived whole is
// left to http.ReadRequest, under ReadHeaderTimeout — on a connection's
// second request too, where no deadline was set at accept. (Closing is
// asserted, never the time it took.)
func TestPartialHeadHasHeaderTimeout(t *testing.T) {
	addr := startServer(t, &Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 50 * time.Millisecond,
		IdleTimeout:       time.Hour,
	})
	c, br := dialT(t, addr)
	io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, _ := answerOf(t, br); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	io.WriteString(c, "GET /2 HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("a head that stops half-way: read %v, want EOF (closed by the server)", err)
	}
}

// originForm makes exactly url.ParseRequestURI's URL, or leaves the
// target to it.
func checkOriginForm(t *testing.T, target string) bool {
	t.Helper()
	got := originForm(target)
	if got == nil {
		return false
	}
	want, err := url.ParseRequestURI(target)
	if err != nil {
		t.Fatalf("originForm(%q) = %#v, url.ParseRequestURI: %v", target, got, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("originForm(%q) = %#v, url.ParseRequestURI = %#v", target, got, want)
	}
	return true
}

func TestOriginForm(t *testing.T) {
	for _, target := range []string{
		"/", "/api/v1/score-sets/urn:mavedb:00000001-a-1", "/a?", "/a?b", "/a?b?", "/a??", "/?",
		"/a?q=%zz&x=1#f", "//a//b/../c", "/$&+,-.:;=@_~", "/a?b c",
	} {
		if !checkOriginForm(t, target) {
			t.Errorf("originForm(%q) = nil, want the URL", target)
		}
	}
	for _, target := range []string{
		"", "*", "a", "http://h/a", "/a%20b", "/a%2F", "/%zz", "/a b", "/a#f", "/a!", "/a*", "/a'b",
		"/(x)", "/[::1]", "/caf\xc3\xa9", "/a\x00", "/a\x7f", "/?\x00", "/a?b\x7f", "/a?\r\n", "/a\\b", "/a\"b", "/a<b>", "/a|b", "/a^b", "/a`b", "/a{b}",
	} {
		if checkOriginForm(t, target) {
			t.Errorf("originForm(%q) made a URL itself, want nil (url.ParseRequestURI's)", target)
		}
	}
}

func FuzzOriginForm(f *testing.F) {
	for _, s := range []string{"/", "/a?b", "/a?", "/a%20", "/a#b", "//x", "/a?b?c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		checkOriginForm(t, target)
	})
}
