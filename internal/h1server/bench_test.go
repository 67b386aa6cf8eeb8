package h1server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkServe measures one keep-alive request and its answer over
// loopback TCP, client included, against net/http's server in the same
// run: the work the public side adds to every request.
func BenchmarkServe(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"urn":"urn:mavedb:00000001-a-1","title":"a score set"}`)
	})
	for _, srv := range []struct {
		name  string
		serve func(net.Listener) error
	}{
		{"server=net-http", (&http.Server{Handler: h}).Serve},
		{"server=h1server", (&Server{Handler: h}).Serve},
		// With floodgate's default timeouts (config.DefaultReadHeaderTimeout,
		// DefaultIdleTimeout): the read deadlines of every request.
		{"server=h1server-timeouts", (&Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}).Serve},
		// As when more than IdleBuffersUpTo connections are open: the
		// connection holds no buffer while it waits for a request.
		{"server=h1server-lean", (&Server{Handler: h, IdleBuffersUpTo: -1}).Serve},
	} {
		b.Run(srv.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go srv.serve(ln)
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			req := []byte("GET /api/v1/score-sets/urn:mavedb:00000001-a-1 HTTP/1.1\r\nHost: bench\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
			probe := &http.Request{Method: "GET"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				res, err := http.ReadResponse(br, probe)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
		})
	}
}

// BenchmarkAnswerHead: the status line and header of a forwarded answer
// (the fields nginx sends, and floodgate's RateLimit fields), written
// into a buffer, as floodgate's server does for every answer.
func BenchmarkAnswerHead(b *testing.B) {
	c := &conn{srv: &Server{}, bw: bufio.NewWriterSize(io.Discard, 16<<10)}
	c.w.conn = c
	c.w.header = make(http.Header, 16)
	w := &c.w
	req := httptest.NewRequest("GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1", nil)
	body := []byte(`{"urn":"urn:mavedb:00000001-a-1","title":"benchmark","numVariants":1234}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		w.reset(req)
		h := w.Header()
		h["Server"] = []string{"nginx/1.22.1"}
		h["Date"] = []string{"Mon, 30 Nov 2026 17:20:00 GMT"}
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{"73"}
		h["Ratelimit-Policy"] = []string{`"rate-limit-ip";q=1500000000;w=300`}
		h["Ratelimit"] = []string{`"rate-limit-ip";r=1499999999;t=300`}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
		w.finish()
		w.release()
	}
}

// BenchmarkAnswerHeadLines: the same answer as floodgate's forwarder
// gives it, the upstream's fields as lines (WriteHeaderLines), with
// floodgate's RateLimit fields in the header map (ratelimit=map, before
// 2026-11-30) or as lines ahead of the upstream's (ratelimit=lines).
func BenchmarkAnswerHeadLines(b *testing.B) {
	const (
		rl     = `"rate-limit-ip";r=1499999999;t=300`
		policy = `"rate-limit-ip";q=1500000000;w=300`
	)
	up := "Server: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 17:20:00 GMT\r\nContent-Type: application/json\r\n"
	body := []byte(`{"urn":"urn:mavedb:00000001-a-1","title":"benchmark","numVariants":1234}` + "\n")
	for _, inMap := range []bool{true, false} {
		name := "ratelimit=lines"
		if inMap {
			name = "ratelimit=map"
		}
		b.Run(name, func(b *testing.B) {
			c := &conn{srv: &Server{}, bw: bufio.NewWriterSize(io.Discard, 16<<10)}
			c.w.conn = c
			c.w.header = make(http.Header, 16)
			w := &c.w
			req := httptest.NewRequest("GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1", nil)
			rlv, pv := []string{rl}, []string{policy}
			lines := make([]byte, 0, 512)
			b.ReportAllocs()
			for b.Loop() {
				w.reset(req)
				lines = lines[:0]
				if inMap {
					h := w.Header()
					h["Ratelimit-Policy"] = pv
					h["Ratelimit"] = rlv
				} else {
					lines = append(lines, "Ratelimit: "+rl+"\r\nRatelimit-Policy: "+policy+"\r\n"...)
				}
				lines = append(lines, up...)
				if !w.WriteHeaderLines(http.StatusOK, lines, int64(len(body))) {
					b.Fatal("lines refused")
				}
				w.Write(body)
				w.finish()
				w.release()
			}
		})
	}
}
