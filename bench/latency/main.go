// Command latency measures response times at a fixed request rate, open
// loop: request i is due at start + i/rate whether or not earlier ones have
// been answered, and its latency is counted from when it was due, so a
// stall shows in the percentiles instead of slowing the load down (wrk,
// closed loop, would hide it; wrk2 is not packaged by Debian). Requests go
// over at most -conns keep-alive connections.
//
// Each connection is one goroutine that writes a request and reads its
// answer itself (-client raw, the default), as wrk does: the measuring
// side then adds one goroutine wake-up a request, not the three hand-offs
// of net/http's Transport (its read and write loops per connection), and
// its garbage collector is off for the run (its allocations are bounded by
// the run's length). On the two-vCPU benchmark machine this took the bare
// upstream's p99 at 4 000 requests/s from 0.8–1.0 ms to 0.35–0.41 ms: the
// client's own noise, which every target's p99 carried (see
// docs/benchmarks.md). -client nethttp measures through net/http's client,
// as this tool did before but with the collector off too.
//
// Go's timers wake about 0.5 ms late on the shared VMs this runs on
// (time.Sleep to a 1 ms tick: median 0.54 ms late, p99 1.1 ms), the same
// for every target, so it prints both measures on one line: p50_us,
// p90_us, p99_us and max_us from when each request was sent (service
// time), and due_p50_us, due_p99_us from when it was due (service time
// plus timer lateness plus any queueing behind slow answers):
//
//	n=10000 errors=0 p50_us=85 p90_us=120 p99_us=310 max_us=2100 due_p50_us=600 due_p99_us=1500
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"time"
)

func main() {
	target := flag.String("url", "", "URL to GET (http only)")
	rate := flag.Int("rate", 1000, "requests per second")
	d := flag.Duration("duration", 10*time.Second, "how long to send")
	conns := flag.Int("conns", 16, "connections (and concurrent requests) at most")
	warmup := flag.Duration("warmup", time.Second, "sent first at the same rate, not counted")
	client := flag.String("client", "raw", "raw: each connection's goroutine writes and reads itself; nethttp: net/http's client")
	flag.Parse()
	u, err := url.Parse(*target)
	if err != nil || u.Scheme != "http" || u.Host == "" || *rate <= 0 || *conns <= 0 || (*client != "raw" && *client != "nethttp") {
		fmt.Fprintln(os.Stderr, "latency: need -url http://…, -rate > 0, -conns > 0, -client raw or nethttp")
		os.Exit(2)
	}
	var get func() getter
	switch *client {
	case "raw":
		get = func() getter { return newRawGetter(u) }
	case "nethttp":
		tr := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true}
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		get = func() getter { return httpGetter{c, *target} }
	}

	interval := time.Second / time.Duration(*rate)
	skip := int(*warmup / interval)
	n := skip + int(*d/interval)
	lat := make([]time.Duration, n)
	fromDue := make([]time.Duration, n)
	failed := make([]bool, n)
	due := make(chan int, n)
	// The run's allocations are a few hundred bytes a request: with the
	// collector off, none of its pauses or assists lands in a measurement.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 30)
	var wg sync.WaitGroup
	start := time.Now().Add(50 * time.Millisecond)
	for range *conns {
		g := get()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.close()
			for i := range due {
				at := start.Add(time.Duration(i) * interval)
				sent := time.Now()
				if err := g.get(); err != nil {
					failed[i] = true
				}
				lat[i], fromDue[i] = time.Since(sent), time.Since(at)
			}
		}()
	}
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		due <- i
	}
	close(due)
	wg.Wait()

	lat, fromDue, failed = lat[skip:], fromDue[skip:], failed[skip:]
	errors := 0
	for _, f := range failed {
		if f {
			errors++
		}
	}
	slices.Sort(lat)
	slices.Sort(fromDue)
	q := func(l []time.Duration, p float64) int64 {
		return l[min(len(l)-1, int(p*float64(len(l))))].Microseconds()
	}
	fmt.Printf("n=%d errors=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d due_p50_us=%d due_p99_us=%d\n",
		len(lat), errors, q(lat, 0.50), q(lat, 0.90), q(lat, 0.99), lat[len(lat)-1].Microseconds(),
		q(fromDue, 0.50), q(fromDue, 0.99))
}

// A getter sends one GET and reads its whole answer; an error or a status
// other than 200 is a failure.
type getter interface {
	get() error
	close()
}

// A rawGetter is one keep-alive connection, dialled again after an error
// or a close.
type rawGetter struct {
	addr string
	req  []byte
	nc   net.Conn
	br   *bufio.Reader
}

func newRawGetter(u *url.URL) *rawGetter {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &rawGetter{
		addr: addr,
		req:  []byte("GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: floodgate-bench-latency\r\n\r\n"),
	}
}

func (g *rawGetter) get() error {
	reused := g.nc != nil
	err := g.try()
	var st *staleError
	if reused && errors.As(err, &st) {
		// The server closed the kept-alive connection before any of
		// the answer came: send the request again on a new one, as
		// net/http's client does.
		err = g.try()
	}
	return err
}

// A staleError is a kept-alive connection found closed before any byte of
// the answer arrived.
type staleError struct{ err error }

func (e *staleError) Error() string { return "connection closed before the answer: " + e.err.Error() }
func (e *staleError) Unwrap() error { return e.err }

// try sends the request once, on the kept-alive connection or a new one.
func (g *rawGetter) try() error {
	if g.nc == nil {
		nc, err := net.DialTimeout("tcp", g.addr, 10*time.Second)
		if err != nil {
			return err
		}
		g.nc = nc
		g.br = bufio.NewReaderSize(nc, 16<<10)
	}
	g.nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := g.nc.Write(g.req)
	if err == nil {
		_, err = g.br.Peek(1)
	}
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)) {
		err = &staleError{err}
	}
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(g.br, nil)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if resp.Close {
			g.close()
		}
	}
	if err != nil {
		g.close()
	}
	return err
}

func (g *rawGetter) close() {
	if g.nc != nil {
		g.nc.Close()
		g.nc, g.br = nil, nil
	}
}

// An httpGetter goes through net/http's client.
type httpGetter struct {
	c   *http.Client
	url string
}

func (g httpGetter) get() error {
	resp, err := g.c.Get(g.url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return err
}

func (httpGetter) close() {}
