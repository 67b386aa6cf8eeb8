// Command idleconns opens many connections to one HTTP server and holds
// them, for bench/idle.sh to read what each costs the server:
//
//	-mode idle    connected, nothing sent
//	-mode slow    part of a request head sent, never the rest (slowloris)
//	-mode kept    one request answered, then the keep-alive connection idle
//
// It dials -n connections (-parallel at a time), sends what the mode says,
// prints "open=N failed=M" once every connection is in that state, and
// holds them until a SIGTERM or SIGINT, or until -hold has passed; then
// it closes them all and exits. Connections the server closes meanwhile
// are not opened again.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "", "host:port to connect to (loopback)")
	n := flag.Int("n", 1000, "connections")
	mode := flag.String("mode", "idle", "idle, slow or kept")
	path := flag.String("path", "/", "the request's target (mode kept)")
	parallel := flag.Int("parallel", 64, "dials at once")
	hold := flag.Duration("hold", 2*time.Minute, "hold the connections this long at most")
	flag.Parse()
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !isLoopback(host) || *n <= 0 || *parallel <= 0 {
		fmt.Fprintln(os.Stderr, "idleconns: need -addr on loopback, -n > 0, -parallel > 0")
		os.Exit(2)
	}
	var send func(net.Conn) error
	switch *mode {
	case "idle":
		send = func(net.Conn) error { return nil }
	case "slow":
		send = func(c net.Conn) error {
			_, err := io.WriteString(c, "GET "+*path+" HTTP/1.1\r\nHost: bench\r\nUser-Agent: idleconns\r\nX-Slow: "+strings.Repeat("s", 10))
			return err
		}
	case "kept":
		send = func(c net.Conn) error { return request(c, *path) }
	default:
		fmt.Fprintf(os.Stderr, "idleconns: unknown mode %q\n", *mode)
		os.Exit(2)
	}

	conns := make([]net.Conn, *n)
	var failed atomic.Int64
	var firstErr atomic.Value
	next := make(chan int)
	var wg sync.WaitGroup
	d := net.Dialer{Timeout: 10 * time.Second}
	for range *parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := d.Dial("tcp", *addr)
				if err == nil {
					c.SetDeadline(time.Now().Add(10 * time.Second))
					if err = send(c); err != nil {
						c.Close()
					} else {
						c.SetDeadline(time.Time{})
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				conns[i] = c
			}
		}()
	}
	for i := range *n {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Printf("open=%d failed=%d\n", int64(*n)-failed.Load(), failed.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "idleconns: first error: %s\n", e)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-time.After(*hold):
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// request sends one GET and reads its answer whole, leaving the
// connection open and idle.
func request(c net.Conn, path string) error {
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: bench\r\nUser-Agent: idleconns\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answer %s", resp.Status)
	}
	if resp.Close {
		return fmt.Errorf("the server closes the connection after its answer")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
