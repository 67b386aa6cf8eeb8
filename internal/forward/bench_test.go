package forward

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/testnet"
)

// benchBody and benchResponse are what bench/gateway.sh's nginx upstream
// answers.
const benchBody = `{"urn":"urn:mavedb:00000001-a-1","title":"benchmark","numVariants":1234}` + "\n"

var benchResponse = "HTTP/1.1 200 OK\r\nServer: nginx/1.26.3\r\nDate: Mon, 30 Nov 2026 10:00:00 GMT\r\n" +
	"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(benchBody)) + "\r\nConnection: keep-alive\r\n\r\n" +
	benchBody

var benchRequest = "GET /api/v1/score-sets/urn:mavedb:00000001-a-1 HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
	"User-Agent: wrk\r\nAccept: */*\r\n\r\n"

var (
	benchRequestBytes  = []byte(benchRequest)
	benchResponseBytes = []byte(benchResponse)
)

// fastUpstream answers every request with benchResponse, allocating
// nothing per request, so that the benchmarks measure the proxies.
func fastUpstream(b testing.TB) string {
	return "http://" + testnet.Serve(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if err := skipHead(br); err != nil {
				return
			}
			if _, err := c.Write(benchResponseBytes); err != nil {
				return
			}
		}
	})
}

// skipHead reads up to the empty line that ends a request head.
func skipHead(br *bufio.Reader) error {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if string(line) == "\r\n" || string(line) == "\n" {
			return nil
		}
	}
}

// benchClient is a keep-alive client that allocates nothing per request.
type benchClient struct {
	c  net.Conn
	br *bufio.Reader
	h  head
}

func newBenchClient(b *testing.B, addr string) *benchClient {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchClient{c: c, br: bufio.NewReader(c)}
}

func (bc *benchClient) get(b *testing.B) {
	if _, err := bc.c.Write(benchRequestBytes); err != nil {
		b.Fatal(err)
	}
	if err := bc.h.readResponse(bc.br); err != nil {
		b.Fatal(err)
	}
	fr, err := bc.h.framing("GET")
	if err != nil || bc.h.status != 200 || fr.chunked || fr.length < 0 {
		b.Fatalf("response %d %+v %v", bc.h.status, fr, err)
	}
	if _, err := bc.br.Discard(int(fr.length)); err != nil {
		b.Fatal(err)
	}
}

func benchProxy(b *testing.B, h http.Handler) {
	fs := front(b, h)
	b.Run("serial", func(b *testing.B) {
		bc := newBenchClient(b, hostOf(fs))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			bc.get(b)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			bc := newBenchClient(b, hostOf(fs))
			for pb.Next() {
				bc.get(b)
			}
		})
	})
}

// BenchmarkForward and BenchmarkReverseProxy serve the same small GET
// through a net/http server on loopback, from a keep-alive client, to the
// same upstream: ns/op and allocs/op side by side.
func BenchmarkForward(b *testing.B) {
	el := newErrorLog()
	benchProxy(b, newForwarder(b, fastUpstream(b), Options{}, el))
}

// BenchmarkForwardReuse is BenchmarkForward in each connection reuse
// mode: what per_client (a lookup by client connection in the pool) and
// none (a new upstream connection for every request) cost.
func BenchmarkForwardReuse(b *testing.B) {
	for _, m := range []struct {
		name string
		mode Reuse
	}{{"shared", ReuseShared}, {"per_client", ReusePerClient}, {"none", ReuseNone}} {
		b.Run("reuse="+m.name, func(b *testing.B) {
			benchProxy(b, newForwarder(b, fastUpstream(b), Options{Reuse: m.mode}, newErrorLog()))
		})
	}
}

func BenchmarkReverseProxy(b *testing.B) {
	el := newErrorLog()
	benchProxy(b, newReference(b, fastUpstream(b), el))
}

// BenchmarkServer is the net/http server's share: a handler that answers
// what the upstream answers, itself.
func BenchmarkServer(b *testing.B) {
	body := []byte(benchBody)
	benchProxy(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Server"] = []string{"nginx/1.26.3"}
		h["Date"] = []string{"Mon, 30 Nov 2026 10:00:00 GMT"}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		w.WriteHeader(200)
		w.Write(body)
	}))
}

// BenchmarkUpstream is the floor: the client against the upstream itself.
func BenchmarkUpstream(b *testing.B) {
	u, _ := url.Parse(fastUpstream(b))
	bc := newBenchClient(b, u.Host)
	b.ReportAllocs()
	for b.Loop() {
		bc.get(b)
	}
}

// BenchmarkReadResponse is the response-head parser alone.
func BenchmarkReadResponse(b *testing.B) {
	r := bytes.NewReader(benchResponseBytes)
	br := bufio.NewReader(r)
	var h head
	b.ReportAllocs()
	b.SetBytes(int64(len(benchResponse)))
	for b.Loop() {
		r.Reset(benchResponseBytes)
		br.Reset(r)
		if err := h.readResponse(br); err != nil {
			b.Fatal(err)
		}
		if _, err := h.framing("GET"); err != nil {
			b.Fatal(err)
		}
	}
}

// sink is a reusable ResponseWriter for allocation counts.
type sink struct {
	h    http.Header
	code int
	n    int
}

func (s *sink) Header() http.Header         { return s.h }
func (s *sink) WriteHeader(code int)        { s.code = code }
func (s *sink) Write(p []byte) (int, error) { s.n += len(p); return len(p), nil }

// TestForwardAllocs holds the Forwarder's own allocations per request
// (without net/http's server) to its budget: the slice holding the
// response's field values (the string holding their bytes is reused while
// the upstream sends the same head).
func TestForwardAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a loopback upstream")
	}
	el := newErrorLog()
	f := newForwarder(t, fastUpstream(t), Options{}, el)
	r, _ := http.NewRequest("GET", "http://gateway/api/v1/score-sets/urn:mavedb:00000001-a-1", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	r.Header.Set("User-Agent", "wrk")
	w := &sink{h: make(http.Header, 8)}
	run := func() {
		clear(w.h)
		w.code, w.n = 0, 0
		f.ServeHTTP(w, r)
		if w.code != 200 || w.n != len(benchBody) {
			t.Fatalf("response %d, %d bytes", w.code, w.n)
		}
	}
	run()
	n := testing.AllocsPerRun(1000, run)
	t.Logf("ServeHTTP allocs = %v", n)
	if n > 1 {
		t.Errorf("ServeHTTP allocs = %v, want ≤ 1", n)
	}
}

// BenchmarkClock: the clock the pool and the head deadlines read
// (monoNow: the monotonic clock alone) against time.Now (wall and
// monotonic), in one run.
func BenchmarkClock(b *testing.B) {
	b.Run("clock=time.Now", func(b *testing.B) {
		b.ReportAllocs()
		var sink time.Time
		for b.Loop() {
			sink = time.Now()
		}
		_ = sink
	})
	b.Run("clock=monoNow", func(b *testing.B) {
		b.ReportAllocs()
		var sink int64
		for b.Loop() {
			sink += monoNow()
		}
		_ = sink
	})
}
