package h1server

import (
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkIdleConnections reports the heap a connection costs while its
// client sends a head slowly (slowloris, slow uploads' heads) against
// net/http's server in the same run: 1,000 connections per run, each with
// part of a head sent, measured once all are waiting in the server.
func BenchmarkIdleConnections(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	const n = 1000
	for _, srv := range []struct {
		name string
		new  func() interface {
			Serve(net.Listener) error
			Close() error
		}
	}{
		{"server=net-http", func() interface {
			Serve(net.Listener) error
			Close() error
		} {
			return &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
		}},
		{"server=h1server", func() interface {
			Serve(net.Listener) error
			Close() error
		} {
			return &Server{Handler: h, ReadHeaderTimeout: time.Minute}
		}},
	} {
		b.Run(srv.name, func(b *testing.B) {
			var perConn float64
			for b.Loop() {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				s := srv.new()
				go s.Serve(ln)
				var before runtime.MemStats
				runtime.GC()
				runtime.GC() // pools empty: the connections' buffers are theirs
				runtime.ReadMemStats(&before)
				conns := make([]net.Conn, 0, n)
				for range n {
					c, err := net.Dial("tcp", ln.Addr().String())
					if err != nil {
						b.Fatal(err)
					}
					io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: "+strings.Repeat("s", 10))
					conns = append(conns, c)
				}
				// Until the server has read every partial head: each holds
				// a goroutine parked in a read.
				for i := 0; runtime.NumGoroutine() < n; i++ {
					if i == 2000 {
						b.Fatalf("%d goroutines for %d connections", runtime.NumGoroutine(), n)
					}
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // the last reads of the heads
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				perConn = float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse) / n
				for _, c := range conns {
					c.Close()
				}
				s.Close()
			}
			b.ReportMetric(perConn, "B/conn")
		})
	}
}
