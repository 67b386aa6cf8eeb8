package h1server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fuzz target feeds arbitrary bytes to an h1server connection as a
// client's whole input (loopback TCP; the client half-closes after writing,
// so every iteration ends without sleeping), and holds the output to this:
//
//   - it parses, to its end, as a sequence of well-formed HTTP/1.x
//     responses (http.ReadResponse);
//   - the handler's answers are at most the requests http.ReadRequest can
//     read from the same input in sequence, and the i-th is the answer to
//     the i-th of them (method, target, body length);
//   - anything else is one error answer of the server's own (400, 417,
//     431, 501, 505), with Connection: close, and nothing follows it;
//   - 1xx answers are 100 Continue only;
//   - no panic reaches h1server's recover (the handler never panics, so
//     one logged is h1server's own).

// panicLog records panics h1server logs.
type panicLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *panicLog) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("panic")) {
		p.mu.Lock()
		p.msgs = append(p.msgs, string(b))
		p.mu.Unlock()
	}
	return len(b), nil
}

func (p *panicLog) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.msgs
	p.msgs = nil
	return m
}

var fuzzServer struct {
	once   sync.Once
	addr   string
	err    error
	panics panicLog
}

// fuzzEcho reads the body and says what it got.
func fuzzEcho(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Echo", "1")
	io.WriteString(w, echoLine(r.Method, r.RequestURI, n, err != nil))
}

func echoLine(method, target string, n int64, bodyErr bool) string {
	return fmt.Sprintf("%q %q %d %v", method, target, n, bodyErr)
}

func fuzzAddr(t testing.TB) string {
	fuzzServer.once.Do(func() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fuzzServer.err = err
			return
		}
		fuzzServer.addr = ln.Addr().String()
		s := &Server{
			Handler:        http.HandlerFunc(fuzzEcho),
			MaxHeaderBytes: 8 << 10,
			ErrorLog:       log.New(&fuzzServer.panics, "", 0),
		}
		go s.Serve(ln) // for the life of the test binary
	})
	if fuzzServer.err != nil {
		t.Fatal(fuzzServer.err)
	}
	return fuzzServer.addr
}

// refRequest is a request as http.ReadRequest reads it from the input.
type refRequest struct {
	method, target string
	n              int64
	bodyErr        bool
}

// referenceRequests reads the requests in data in sequence, as h1server
// would: skipping one CRLF (or LF, or CR) before each, reading each body to
// its end, and stopping after a request that ends the connection
// (Connection: close, HTTP/1.0 without keep-alive) or whose body is
// broken. It is an upper bound: h1server may stop earlier (its checks on
// Host and header fields, its head size limit, Expect).
func referenceRequests(data []byte) []refRequest {
	var reqs []refRequest
	br := bufio.NewReader(bytes.NewReader(data))
	for {
		req, err := nextRequest(br)
		if err != nil {
			return reqs
		}
		n, err := io.Copy(io.Discard, req.Body)
		reqs = append(reqs, refRequest{req.Method, req.RequestURI, n, err != nil})
		// A chunked request, or an HTTP/1.0 one with a body, ends the
		// connection (h1server cannot tell whether it also had a
		// Content-Length: a smuggling attempt).
		if err != nil || req.Close || len(req.TransferEncoding) > 0 || !req.ProtoAtLeast(1, 1) && req.ContentLength != 0 {
			return reqs
		}
	}
}

var serverErrorStatus = map[int]bool{400: true, 417: true, 431: true, 501: true, 505: true}

func checkServe(t *testing.T, data []byte) {
	addr := fuzzAddr(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(safetyDeadline))
	go func() {
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
	}()
	out, err := io.ReadAll(resetAsEOF{c})
	if err != nil {
		t.Fatalf("reading the answers: %v (a hang?); got so far %q", err, out)
	}
	if p := fuzzServer.panics.take(); len(p) > 0 {
		t.Fatalf("h1server panicked on %q:\n%s", data, strings.Join(p, "\n"))
	}

	ref := referenceRequests(data)
	br := bufio.NewReader(bytes.NewReader(out))
	handled := 0
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return
		}
		method := http.MethodGet
		if handled < len(ref) {
			method = ref[handled].method
		}
		res, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("malformed output after %d answers: %v\ninput:  %q\noutput: %q", handled, err, data, out)
		}
		body, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("malformed body after %d answers: %v\ninput:  %q\noutput: %q", handled, err, data, out)
		}
		switch {
		case res.StatusCode/100 == 1:
			if res.StatusCode != http.StatusContinue {
				t.Fatalf("1xx answer %d\ninput:  %q\noutput: %q", res.StatusCode, data, out)
			}
		case handled < len(ref) && ref[handled].method == http.MethodOptions && ref[handled].target == "*" && !serverErrorStatus[res.StatusCode]:
			// The server's own answer, as net/http's.
			if res.StatusCode != http.StatusOK || len(body) != 0 || res.Header.Get("X-Echo") != "" {
				t.Fatalf("OPTIONS * answered %d %q by the handler %v\ninput:  %q", res.StatusCode, body, res.Header.Get("X-Echo") != "", data)
			}
			handled++
		case res.Header.Get("X-Echo") == "1":
			if handled >= len(ref) {
				t.Fatalf("more handler answers (%d) than requests http.ReadRequest reads (%d)\ninput:  %q\noutput: %q",
					handled+1, len(ref), data, out)
			}
			r := ref[handled]
			if want := echoLine(r.method, r.target, r.n, r.bodyErr); method != http.MethodHead && string(body) != want {
				t.Fatalf("answer %d is to another request: %s, want %s\ninput:  %q\noutput: %q", handled, body, want, data, out)
			}
			handled++
		default:
			if !serverErrorStatus[res.StatusCode] || !res.Close {
				t.Fatalf("unexpected answer %d (close %v) after %d handled\ninput:  %q\noutput: %q",
					res.StatusCode, res.Close, handled, data, out)
			}
			// (Read as the answer to a HEAD request, a close-delimited
			// error answer's body is left over: it ends at EOF all the same.)
			if rest, _ := io.ReadAll(br); len(rest) > 0 && method != http.MethodHead {
				t.Fatalf("bytes after a closing error answer: %q\ninput:  %q", rest, data)
			}
			return
		}
	}
}

// hostileSeeds are the hostile inputs of the differential test and more.
func hostileSeeds() []string {
	seeds := []string{
		get11,
		get11 + get11 + get11,
		get10,
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get11,
		"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-T: v\r\n\r\n" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nExpect:\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1,2\r\n\r\nhel",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
		"POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\nhello",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n" + get11,
		"GET / HTTP/1.1\nHost: x\n\nGET /2 HTTP/1.1\nHost: x\n\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  b\r\n\r\n",
		"GET / HTTP/1.1\r\n Host: x\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
		"GET http://example.com/p HTTP/1.1\r\n\r\n",
		"GET http://example.com/ HTTP/1.1\r\nHost: a b\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"GET  / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / http/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.2\r\nHost: x\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: x\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET /\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 10<<10) + "\r\n\r\n",
		"FOO_BAR /x HTTP/1.1\r\nHost: x\r\n\r\n",
		"G@T / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / transfer encoding\r\nHost: x\r\n\r\n",
		"\r\n" + get11,
		"\n" + get11,
		"\r\n\r\n" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\r\n" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("x", 100) + get11,
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + get11,
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello",
		"",
		"\r\n",
		"G",
	}
	return seeds
}

func FuzzServe(f *testing.F) {
	for _, s := range hostileSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkServe(t, data)
	})
}

// TestServeSeeds runs the fuzz checks on the seeds with -race too.
func TestServeSeeds(t *testing.T) {
	for i, s := range hostileSeeds() {
		t.Run(strconv.Itoa(i), func(t *testing.T) { checkServe(t, []byte(s)) })
	}
}

func TestHostileInputNeverReachesHandler(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want int
	}{
		{"two-content-lengths", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello", 400},
		{"content-length-list", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1,2\r\n\r\nhel", 400},
		{"content-length-negative", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400},
		{"content-length-overflow", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
		{"content-length-plus", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", 400},
		{"content-length-hex", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x5\r\n\r\nhello", 400},
		{"te-chunked-identity", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 501},
		{"te-xchunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501},
		{"te-gzip-chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
		{"te-twice", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
		{"te-space-before-colon", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400},
		{"nul-in-header-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400},
		{"ctl-in-header-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", 400},
		{"cr-in-header-value", "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400},
		{"space-before-colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", 400},
		{"header-without-colon", "GET / HTTP/1.1\r\nHost: x\r\nX-A\r\n\r\n", 400},
		{"header-name-with-space", "GET / HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", 400},
		{"header-name-non-token", "GET / HTTP/1.1\r\nHost: x\r\nX(A): b\r\n\r\n", 400},
		{"obs-fold-first-line", "GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400},
		{"missing-host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"two-hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"host-with-space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"host-with-slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
		{"host-with-at", "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", 400},
		{"host-with-quote", "GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 400},
		{"request-line-double-space", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"request-line-trailing-space", "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
		{"lowercase-version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400},
		{"version-one-digit", "GET / HTTP/1\r\nHost: x\r\n\r\n", 400},
		{"version-leading-zero", "GET / HTTP/01.1\r\nHost: x\r\n\r\n", 400},
		{"http-0.9", "GET /\r\n\r\n", 400},
		{"http-2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"http-2-preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
		{"http-3.0", "GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505},
		{"invalid-method", "G@T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"empty-request-line", "\r\n\r\n", 400},
		{"head-too-large", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 3*testMaxHeaderBytes) + "\r\n\r\n", 431},
		{"many-headers-too-large", "GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-A: b\r\n", testMaxHeaderBytes) + "\r\n", 431},
		{"expect-unknown", "POST / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello", 417},
		// Regression: the inputs below are refused with net/http's answer,
		// without reaching the handler; see the cases of the same names in
		// compare_test.go.
		{"empty-host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", 400},
		// nul-in-request-uri, del-in-request-uri, bad-percent: a
		// *url.Error is a net.Error but no failed read: 400, as with
		// net/http (not the silence kept for a client gone away).
		{"nul-in-request-uri", "GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"del-in-request-uri", "GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"bad-percent-in-request-uri", "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		// transfer-encoding-text-in-request-line: 400, as with net/http,
		// not 501 (the words are the client's, not an unsupported coding).
		{"transfer-encoding-text-in-request-line", "GET / transfer encoding\r\nHost: x\r\n\r\n", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reached := make(chan string, 1)
			srv := startH1(t, func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				reached <- r.Method + " " + r.RequestURI
			})
			defer srv.stop()
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(safetyDeadline))
			go func() {
				c.Write([]byte(tc.in))
				c.(*net.TCPConn).CloseWrite()
			}()
			br := bufio.NewReader(resetAsEOF{c})
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Errorf("no answer (%v), want %d", err, tc.want)
			} else {
				io.ReadAll(res.Body)
				if res.StatusCode != tc.want {
					t.Errorf("status %d, want %d", res.StatusCode, tc.want)
				}
				if !res.Close {
					t.Errorf("answer without Connection: close")
				}
				wantEOF(t, br)
			}
			select {
			case r := <-reached:
				t.Errorf("handler reached by %q", r)
			default:
			}
		})
	}
}

// RFC 9112 section 6.3: a server that receives both Transfer-Encoding and
// Content-Length "MUST close the connection after responding to such a
// request"; section 6.1: one that receives Transfer-Encoding in an HTTP/1.0
// request "MUST treat the message as if the framing is faulty ... and
// close the connection after processing the message". A front proxy that
// frames by Content-Length would otherwise see the rest as the same request
// while the server sees another one (request smuggling).
//
// Regression: net/http keeps the connection and serves the smuggled
// request. h1server uses its parser, http.ReadRequest, which drops the
// Content-Length silently, so such a request cannot be told apart once
// parsed: h1server closes the connection after every chunked request and
// after every HTTP/1.0 request with a body.
func TestContentLengthWithTransferEncodingClosesConnection(t *testing.T) {
	cases := map[string]string{
		"http11-cl-and-te": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" +
			"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
		"http10-te-and-cl": "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello" +
			"GET /smuggled HTTP/1.0\r\n\r\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := startH1(t, echo)
			defer srv.stop()
			r := exchange(t, cmpCase{in: in, n: 2, halfClose: true}, srv)
			if len(r.Final) != 1 || !r.Closed {
				t.Errorf("got %d answers (handler reached by %q), want 1 and the connection closed", len(r.Final), r.Reached)
			}
		})
	}
}
