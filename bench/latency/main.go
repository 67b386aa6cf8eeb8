// Command latency measures response times at a fixed request rate, open
// loop: request i is due at start + i/rate whether or not earlier ones have
// been answered, and its latency is counted from when it was due, so a
// stall shows in the percentiles instead of slowing the load down (wrk,
// closed loop, would hide it; wrk2 is not packaged by Debian). Requests go
// over at most -conns keep-alive connections. It prints one line:
//
//	n=10000 errors=0 p50_us=85 p90_us=120 p99_us=310 max_us=2100
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
				lat[i] = time.Since(at)
			}
		}()
	}
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		due <- i
	}
	close(due)
	wg.Wait()

	lat, failed = lat[skip:], failed[skip:]
	errors := 0
	for _, f := range failed {
		if f {
			errors++
		}
	}
	slices.Sort(lat)
	q := func(p float64) int64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds() }
	fmt.Printf("n=%d errors=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d\n",
		len(lat), errors, q(0.50), q(0.90), q(0.99), lat[len(lat)-1].Microseconds())
}
