// Command relay is a measurement aid: the floor of a proxy written in Go
// on this machine. Each client connection gets its own upstream
// connection; what one read from the client brings is written to the
// upstream, and what one read from the upstream brings is written back.
// No HTTP is parsed: it works only because wrk sends one whole request a
// write and the benchmark's upstream answers in one write. It does none
// of what a proxy must (framing, timeouts, limits): it is not a proxy to
// run. bench/gateway.sh runs it as the relay target, to show how much of
// a request's cost is Go's runtime and the kernel, and how much is
// floodgate's code (docs/benchmarks.md, "A request's profile today").
//
// With -raw it reads and writes as floodgate does (internal/rawio: raw
// system calls, and the held read before the client's next request), so
// that it is the floor of floodgate's own I/O: bench/gateway.sh runs it
// as the relay_raw target.
package main

import (
	"flag"
	"log"
	"net"

	"github.com/floodgate/floodgate/internal/rawio"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18087", "listen address")
	upstream := flag.String("upstream", "127.0.0.1:18081", "upstream address (host:port)")
	raw := flag.Bool("raw", false, "read and write as floodgate does (internal/rawio)")
	flag.Parse()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("relay: %v", err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatalf("relay: %v", err)
		}
		go relay(c, *upstream, *raw)
	}
}

func relay(c net.Conn, upstream string, raw bool) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Printf("relay: %v", err)
		return
	}
	defer u.Close()
	var next interface{ AwaitNext() }
	if raw {
		c, u = rawio.Wrap(c), rawio.Wrap(u)
		next, _ = c.(interface{ AwaitNext() })
	}
	buf := make([]byte, 16<<10)
	for {
		if next != nil {
			next.AwaitNext()
		}
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		if _, err := u.Write(buf[:n]); err != nil {
			return
		}
		if n, err = u.Read(buf); err != nil {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}
