// Command latency measures response times at a fixed request rate, open
// loop: request i is due at start + i/rate whether or not earlier ones have
// been answered, and its latency is counted from when it was due, so a
// stall shows in the percentiles instead of slowing the load down (wrk,
// closed loop, would hide it; wrk2 is not packaged by Debian). Requests go
// over at most -conns keep-alive connections.
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
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	url := flag.String("url", "", "URL to GET")
	rate := flag.Int("rate", 1000, "requests per second")
	d := flag.Duration("duration", 10*time.Second, "how long to send")
	conns := flag.Int("conns", 16, "connections (and concurrent requests) at most")
	warmup := flag.Duration("warmup", time.Second, "sent first at the same rate, not counted")
	flag.Parse()
	if *url == "" || *rate <= 0 || *conns <= 0 {
		fmt.Fprintln(os.Stderr, "latency: need -url, -rate > 0, -conns > 0")
		os.Exit(2)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	interval := time.Second / time.Duration(*rate)
	skip := int(*warmup / interval)
	n := skip + int(*d/interval)
	lat := make([]time.Duration, n)
	fromDue := make([]time.Duration, n)
	failed := make([]bool, n)
	due := make(chan int, n)
	var wg sync.WaitGroup
	start := time.Now().Add(50 * time.Millisecond)
	for range *conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range due {
				at := start.Add(time.Duration(i) * interval)
				sent := time.Now()
				resp, err := client.Get(*url)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						failed[i] = true
					}
				}
				if err != nil {
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
