package h1server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
)

// BenchmarkServe measures one keep-alive request and its answer over
// loopback TCP, client included, against net/http's server in the same
// run: the work the public side adds to every request (issue 5).
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
