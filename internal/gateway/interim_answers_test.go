package gateway_test

// floodgate's RateLimit fields around interim answers: an upstream's 103
// Early Hints and a 101 Switching Protocols must not take them off, or put
// them on the wrong answer (statusWriter).

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEarlyHintsWithUpstreamRateLimit: an upstream 103 that
// carries its own RateLimit / RateLimit-Policy must not take floodgate's
// fields off the final response.
func TestEarlyHintsWithUpstreamRateLimit(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [100/1m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("RateLimit", `"upstream";r=1;t=1`)
		w.Header().Set("RateLimit-Policy", `"upstream";q=2;w=1`)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Del("RateLimit")
		w.Header().Del("RateLimit-Policy")
		io.WriteString(w, "ok")
	}))
	resp, _ := c.do("GET", "/x", "203.0.113.9")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rl, pol := resp.Header.Values("Ratelimit"), resp.Header.Values("Ratelimit-Policy")
	if len(rl) != 1 || !strings.HasPrefix(rl[0], `"per-ip";r=`) {
		t.Errorf("final RateLimit %q, want floodgate's once", rl)
	}
	if len(pol) != 1 || !strings.HasPrefix(pol[0], `"per-ip";q=`) {
		t.Errorf("final RateLimit-Policy %q, want floodgate's once", pol)
	}
}

// TestEarlyHintsThroughReverseProxy: a request with Expect goes to
// the ReverseProxy fallback, which clears the header map after relaying a
// 1xx: floodgate's fields must still reach the final response.
func TestEarlyHintsThroughReverseProxy(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [100/1m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "ok")
	}))
	req, _ := http.NewRequest("POST", c.gw.URL+"/x", strings.NewReader("body"))
	req.Header.Set("X-Forwarded-For", "203.0.113.10")
	req.Header.Set("Expect", "100-continue")
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if rl := resp.Header.Values("Ratelimit"); len(rl) != 1 || !strings.HasPrefix(rl[0], `"per-ip";r=`) {
		t.Errorf("status %d, final RateLimit %q, want floodgate's once", resp.StatusCode, rl)
	}
}

// TestUpgradeKeepsRateLimit: a 101 relayed by the ReverseProxy
// fallback (upgrades) is written from the header map after a hijack,
// without WriteHeader: floodgate's RateLimit fields, pending in the
// statusWriter, must still reach it.
func TestUpgradeKeepsRateLimit(t *testing.T) {
	c := newCostHarness(t, `
upstreams: {api: {url: "UPSTREAM"}}
rules:
  - {name: per-ip, limits: [100/1m]}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		bw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		bw.Flush()
		time.Sleep(100 * time.Millisecond)
	}))
	conn, err := net.Dial("tcp", strings.TrimPrefix(c.gw.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.7\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 101 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if rl := resp.Header.Values("Ratelimit"); len(rl) != 1 || !strings.HasPrefix(rl[0], `"per-ip";r=`) {
		t.Errorf("101 RateLimit %q, want floodgate's", rl)
	}
}
