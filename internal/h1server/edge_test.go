package h1server

// The request policy of both server engines (httpsyntax.Head.Refuse and
// CloseAfter), from outside: raw requests over loopback TCP to
// floodgate's server and to net/http's as server.engine: net/http runs it
// (NewNetHTTPServer), with a handler that records what reached it — what
// the gateway would have forwarded.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// engines start a server of each kind on loopback with handler h and
// the given head limit, and return its address.
var engines = []struct {
	name  string
	start func(t *testing.T, h http.Handler, maxHeaderBytes int) string
}{
	{"floodgate", func(t *testing.T, h http.Handler, max int) string {
		s := &Server{Handler: h, MaxHeaderBytes: max, ErrorLog: quietLog}
		return serveOn(t, s.Serve, s.Close)
	}},
	{"net/http", func(t *testing.T, h http.Handler, max int) string {
		s := NewNetHTTPServer(&http.Server{Handler: h, MaxHeaderBytes: max, ErrorLog: quietLog})
		return serveOn(t, s.Serve, s.Close)
	}},
}

func serveOn(t *testing.T, serve func(net.Listener) error, stop func() error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { serve(ln); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	return ln.Addr().String()
}

// reached records the requests a handler saw ("METHOD target").
type reached struct {
	mu   sync.Mutex
	reqs []string
}

func (rc *reached) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, r.Method+" "+r.RequestURI)
		rc.mu.Unlock()
		io.WriteString(w, "ok")
	})
}

func (rc *reached) list() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.reqs...)
}

// sendAll writes raw on a new connection and reads every answer until the
// server closes it; a read error other than EOF (a reset) ends it too.
// The safety deadline only guards against a hang: a server that keeps the
// connection open fails the test.
func sendAll(t *testing.T, addr, raw string) (statuses []int, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return sendOn(t, c, raw)
}

// sendOn is sendAll on a connection already made; it closes c.
func sendOn(t *testing.T, c net.Conn, raw string) (statuses []int, closed bool) {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(safetyDeadline))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	// Half-close: a server that waits for more may then end.
	c.(*net.TCPConn).CloseWrite()
	br := bufio.NewReader(c)
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return statuses, !isTimeout(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		statuses = append(statuses, res.StatusCode)
	}
}

func TestAmbiguousFramingNeverSmuggles(t *testing.T) {
	const smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name string
		raw  string
		want []int // statuses answered, in order
		// reach is what the handler (the upstream) may see.
		reach []string
	}{
		// A front proxy framing by Content-Length sends all of it as one
		// request; Transfer-Encoding would end the body after "0".
		{"CL.TE", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 39\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, []int{400}, nil},
		{"TE.CL", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n" + smuggled + "\r\n0\r\n\r\n", []int{400}, nil},
		// Go's parser ignores Transfer-Encoding in HTTP/1.0: the chunked
		// body would be read as the next request.
		{"TE in HTTP/1.0", "POST /a HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled, []int{400}, nil},
		// Go's parser refuses these first (501: a coding it does not
		// support), in both engines.
		{"TE not chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n" + smuggled, []int{501}, nil},
		{"TE chunked then identity", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + smuggled, []int{501}, nil},
		{"TE gzip then chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + smuggled, []int{501}, nil},
		{"TE folded", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + smuggled, []int{400}, nil},
		// Unambiguous chunked: served, then the connection ends.
		{"chunked", "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled, []int{200}, []string{"POST /a"}},
		// Content-Length alone: the next request is a request.
		{"content-length", "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok" + smuggled, []int{200, 200}, []string{"POST /a", "GET /smuggled"}},
	} {
		for _, e := range engines {
			t.Run(tc.name+"/"+e.name, func(t *testing.T) {
				var rc reached
				addr := e.start(t, rc.handler(), 0)
				statuses, closed := sendAll(t, addr, tc.raw)
				if !closed {
					t.Error("the connection stayed open")
				}
				if got := rc.list(); !equal(got, tc.reach) || !equalInts(statuses, tc.want) {
					t.Errorf("answers %v, handler reached by %q; want %v, %q", statuses, got, tc.want, tc.reach)
				}
			})
		}
	}
}

func TestConnectRefused(t *testing.T) {
	for _, raw := range []string{
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.com:443 HTTP/1.0\r\n\r\n",
		"CONNECT /a HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		for _, e := range engines {
			t.Run(e.name, func(t *testing.T) {
				var rc reached
				addr := e.start(t, rc.handler(), 0)
				// Whatever follows is never read as HTTP again.
				statuses, closed := sendAll(t, addr, raw+"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
				if got := rc.list(); len(got) != 0 || !equalInts(statuses, []int{501}) || !closed {
					t.Errorf("%q: answers %v, closed %v, handler reached by %q; want [501], closed, none", raw, statuses, closed, got)
				}
			})
		}
	}
}

func TestHostPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      int
	}{
		{"origin-form", "GET /p HTTP/1.1\r\nHost: example.com\r\n\r\n", 200},
		{"port", "GET /p HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 200},
		{"IPv6", "GET /p HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200},
		{"no Host, HTTP/1.0", "GET /p HTTP/1.0\r\n\r\n", 200},
		{"no Host", "GET /p HTTP/1.1\r\n\r\n", 400},
		{"empty Host", "GET /p HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"empty Host, HTTP/1.0", "GET /p HTTP/1.0\r\nHost: \r\n\r\n", 400},
		{"two Hosts", "GET /p HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
		{"comma", "GET /p HTTP/1.1\r\nHost: a,b\r\n\r\n", 400},
		{"semicolon", "GET /p HTTP/1.1\r\nHost: a;b\r\n\r\n", 400},
		{"userinfo", "GET /p HTTP/1.1\r\nHost: u@a\r\n\r\n", 400},
		{"percent", "GET /p HTTP/1.1\r\nHost: a%2fb\r\n\r\n", 400},
		{"bad port", "GET /p HTTP/1.1\r\nHost: a:99999\r\n\r\n", 400},
		{"unbracketed IPv6", "GET /p HTTP/1.1\r\nHost: ::1\r\n\r\n", 400},
		{"parenthesis", "GET /p HTTP/1.1\r\nHost: a(b)\r\n\r\n", 400},
		{"long", "GET /p HTTP/1.1\r\nHost: " + strings.Repeat("a", 300) + "\r\n\r\n", 400},
		{"absolute-form", "GET http://example.com/p HTTP/1.1\r\nHost: example.com\r\n\r\n", 200},
		{"absolute-form, other Host", "GET http://example.com/p HTTP/1.1\r\nHost: other:81\r\n\r\n", 200},
		{"absolute-form, no Host", "GET http://example.com/p HTTP/1.1\r\n\r\n", 400},
		{"absolute-form, invalid Host", "GET http://example.com/p HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"absolute-form, hostile Host", "GET http://example.com/p HTTP/1.1\r\nHost: a,evil\r\n\r\n", 400},
		{"absolute-form, empty Host", "GET http://example.com/p HTTP/1.1\r\nHost:\r\n\r\n", 400},
		{"absolute-form, empty authority", "GET http:///p HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"absolute-form, userinfo", "GET http://u:p@example.com/p HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"absolute-form, ftp", "GET ftp://example.com/p HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
		{"absolute-form, bad port", "GET http://example.com:99999/p HTTP/1.1\r\nHost: example.com\r\n\r\n", 400},
	} {
		for _, e := range engines {
			t.Run(tc.name+"/"+e.name, func(t *testing.T) {
				var rc reached
				addr := e.start(t, rc.handler(), 0)
				statuses, _ := sendAll(t, addr, tc.raw)
				reachedWant := 0
				if tc.want == 200 {
					reachedWant = 1
				}
				if got := rc.list(); len(statuses) != 1 || statuses[0] != tc.want || len(got) != reachedWant {
					t.Errorf("%q: answers %v, handler reached by %q; want %d", tc.raw, statuses, got, tc.want)
				}
			})
		}
	}
}

// headOf returns a request head of exactly size bytes (a field padded to
// length), with extra fields before the padding.
func headOf(t *testing.T, size int, first, extra string) string {
	t.Helper()
	h := first + "Host: x\r\n" + extra + "X-Pad: "
	pad := size - len(h) - len("\r\n\r\n")
	if pad < 0 {
		t.Fatalf("a head of %d bytes cannot hold %q", size, h)
	}
	return h + strings.Repeat("p", pad) + "\r\n\r\n"
}

func TestMaxHeaderBytesExact(t *testing.T) {
	for _, limit := range []int{4 << 10, 64 << 10} {
		for _, tc := range []struct {
			name, first, extra, body string
		}{
			{"plain", "GET /p HTTP/1.1\r\n", "", ""},
			{"with a body", "POST /p HTTP/1.1\r\n", "Content-Length: 2\r\n", "ok"},
			{"absolute-form", "GET http://x/p HTTP/1.1\r\n", "", ""},
		} {
			for _, e := range engines {
				for _, delta := range []int{-1, 0, 1, 4096, 8192} {
					size := limit + delta
					want := []int{200, 200}
					if delta > 0 {
						want = []int{431}
					}
					t.Run(fmt.Sprintf("%s/%s/limit%d%+d", tc.name, e.name, limit, delta), func(t *testing.T) {
						var rc reached
						addr := e.start(t, rc.handler(), limit)
						// A second request follows at once: its bytes are
						// read with the first's head, not counted in it.
						raw := headOf(t, size, tc.first, tc.extra) + tc.body + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
						statuses, _ := sendAll(t, addr, raw)
						if !equalInts(statuses, want) {
							t.Errorf("limit %d, head of %d bytes: answers %v, want %v", limit, size, statuses, want)
						}
					})
				}
			}
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestConnectRefusedOverTLS: Go's server on a TLS listener, HTTP/1.1 and
// HTTP/2, answers CONNECT with 501 and never runs the handler for it.
func TestConnectRefusedOverTLS(t *testing.T) {
	var rc reached
	ts := httptest.NewUnstartedServer(RefuseConnect(rc.handler()))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	for _, h2 := range []bool{false, true} {
		tr := ts.Client().Transport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = h2
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		if h2 {
			tr.TLSClientConfig.NextProtos = []string{"h2"}
		}
		req, _ := http.NewRequest(http.MethodConnect, ts.URL, nil)
		req.Host = "example.com:443"
		res, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("HTTP/2 %v: %v", h2, err)
		}
		res.Body.Close()
		tr.CloseIdleConnections()
		if res.StatusCode != http.StatusNotImplemented || h2 != (res.ProtoMajor == 2) {
			t.Errorf("HTTP/2 %v: CONNECT answered %d (%s), want 501", h2, res.StatusCode, res.Proto)
		}
	}
	if got := rc.list(); len(got) != 0 {
		t.Errorf("the handler ran for %q", got)
	}
}
