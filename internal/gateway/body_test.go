package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/listen"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// engines are the values of server.engine: every test of this file runs
// against both servers.
var engines = []string{config.EngineFloodgate, config.EngineNetHTTP}

// engineFront is a gateway served by one engine on loopback, with its
// metrics.
type engineFront struct {
	addr  string
	admin http.Handler
}

// startEngine builds a gateway from yaml (${UP} is up) and serves it with
// engine on a loopback port, as `floodgate serve` would.
func startEngine(t *testing.T, engine, yaml, up string) *engineFront {
	t.Helper()
	return startEngineLogging(t, engine, yaml, up, io.Discard)
}

// startEngineLogging is startEngine with the gateway's log written to log.
func startEngineLogging(t *testing.T, engine, yaml, up string, log io.Writer) *engineFront {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(yaml), "", func(k string) (string, bool) {
		if k == "UP" {
			return up, true
		}
		return "", false
	})
	if err != nil {
		t.Fatalf("config.Parse: %v", err)
	}
	f.Config.ApplyDefaults()
	metrics := telemetry.NewMetrics("test")
	g, problems := gateway.New(f, gateway.Options{
		Store:   memory.New(memory.Options{}),
		Metrics: metrics,
		Logger:  telemetry.NewLogger(log, "info"),
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.New: %v", problems)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writeIdle, _ := config.ParseTimeout(f.Config.Server.WriteIdleTimeout)
	ln = listen.WriteIdle(ln, writeIdle)
	switch engine {
	case config.EngineFloodgate:
		s := &h1server.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		go s.Serve(ln)
		t.Cleanup(func() { s.Close() })
	default:
		s := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		go s.Serve(ln)
		t.Cleanup(func() { s.Close() })
	}
	return &engineFront{addr: ln.Addr().String(), admin: admin.Handler(admin.Options{Gatherer: metrics.Registry})}
}

func (f *engineFront) requests(route, code string) float64 {
	return scrape(f.admin, `floodgate_requests_total{code="`+code+`",listener="gateway",route="`+route+`"}`)
}

// rawUpstreamRecorder is an upstream that reads what each connection
// sends until the connection ends, and never answers: it records how
// each ended.
type rawUpstreamRecorder struct {
	addr   string
	mu     sync.Mutex
	ends   []string // "closed" (the gateway closed it) or what else ended it
	ended  chan struct{}
	conns  int
	gotten []string
}

func newRawUpstreamRecorder(t *testing.T) *rawUpstreamRecorder {
	u := &rawUpstreamRecorder{ended: make(chan struct{}, 16)}
	u.addr = testnet.Serve(t, func(c net.Conn) {
		u.mu.Lock()
		u.conns++
		u.mu.Unlock()
		// A bound for a gateway that never closes: the test then fails.
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		b, err := io.ReadAll(c)
		end := "closed"
		if err != nil {
			end = err.Error()
		}
		u.mu.Lock()
		u.ends = append(u.ends, end)
		u.gotten = append(u.gotten, string(b))
		u.mu.Unlock()
		u.ended <- struct{}{}
	})
	return u
}

// exchangeRaw sends raw on a new connection to addr and returns the
// response (its body read) or an error.
func exchangeRaw(t *testing.T, addr, raw string) (*http.Response, string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
	if _, err := io.WriteString(c, raw); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return resp, string(body), nil // a reset after the answer
	}
	return resp, string(body), nil
}

func TestMalformedChunkedBodyIsTheClients(t *testing.T) {
	head := "POST /upload HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\nAccept: application/problem+json\r\n\r\n"
	// Valid chunks first, so that the head and part of the body reach
	// the upstream before the fault.
	good := "4000\r\n" + strings.Repeat("a", 0x4000) + "\r\n"
	cases := []struct{ name, body string }{
		{"chunk size over 64 bits", good + "ffffffffffffffffff\r\n"},
		{"100 KB size line", good + "1" + strings.Repeat("0", 100<<10) + "\r\n"},
		{"chunk data without its CRLF", good + "5\r\nhelloXY5\r\nhello\r\n0\r\n\r\n"},
	}
	for _, engine := range engines {
		for _, tc := range cases {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newRawUpstreamRecorder(t)
				gw := startEngine(t, engine, "upstreams: {api: {url: \"${UP}\"}}\n", "http://"+up.addr)
				resp, body, err := exchangeRaw(t, gw.addr, head+tc.body)
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("status = %d, want 400; body %s", resp.StatusCode, body)
				}
				if !strings.Contains(body, `"status":400`) {
					t.Errorf("body = %s, want a problem with status 400", body)
				}
				if got := gw.requests("default", "400"); got != 1 {
					t.Errorf("requests_total{code=400} = %v, want 1", got)
				}
				if got := gw.requests("default", "502"); got != -1 {
					t.Errorf("requests_total{code=502} = %v, want none", got)
				}
				if got := scrape(gw.admin, `floodgate_upstream_duration_seconds_count{route="default"}`); got > 0 {
					t.Errorf("upstream_duration_seconds_count = %v, want no upstream response counted", got)
				}
				<-up.ended
				up.mu.Lock()
				defer up.mu.Unlock()
				if up.conns != 1 || up.ends[0] != "closed" {
					t.Errorf("upstream connections %d, ended %q; want 1, closed by the gateway", up.conns, up.ends)
				}
				if !strings.HasPrefix(up.gotten[0], "POST /upload HTTP/1.1\r\n") {
					t.Errorf("upstream got %.40q, want the partial request", up.gotten[0])
				}
			})
		}
	}
}

// countingUpstream answers every request 200 after reading its body, and
// counts the requests that reached it (arrived) and those in flight.
type countingUpstream struct {
	url      string
	mu       sync.Mutex
	arrived  int
	inflight int
	maxIn    int
	bytes    int64
}

func newCountingUpstream(t *testing.T) *countingUpstream {
	u := &countingUpstream{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.arrived++
		u.inflight++
		u.maxIn = max(u.maxIn, u.inflight)
		u.mu.Unlock()
		n, _ := io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.inflight--
		u.bytes += n
		u.mu.Unlock()
		fmt.Fprintf(w, "%d", n)
	}))
	t.Cleanup(s.Close)
	u.url = s.URL
	return u
}

func (u *countingUpstream) counts() (arrived, inflight, maxIn int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.arrived, u.inflight, u.maxIn
}

func chunked(n int) string {
	var b strings.Builder
	for n > 0 {
		k := min(n, 300)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, strings.Repeat("b", k))
		n -= k
	}
	return b.String() + "0\r\n\r\n"
}

func TestBodyAndTargetLimits(t *testing.T) {
	const yaml = `
server: {max_body_bytes: 1000}
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: small, path: /small, upstream: api, max_body_bytes: 100}
  - {name: other, path: "/{rest...}", upstream: api}
`
	post := func(path, framing string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAccept: application/problem+json\r\n" + framing
	}
	tests := []struct {
		name      string
		raw       string
		status    int
		route     string
		forwarded bool // the request reaches the upstream (whole or cut off)
	}{
		{"declared length far over the limit", post("/up", "Content-Length: 10000000000\r\n\r\n"), 413, "other", false},
		{"declared length one over", post("/up", "Content-Length: 1001\r\n\r\n") + strings.Repeat("c", 1001), 413, "other", false},
		{"declared length at the limit", post("/up", "Content-Length: 1000\r\n\r\n") + strings.Repeat("c", 1000), 200, "other", true},
		{"chunked over the limit", post("/up", "Transfer-Encoding: chunked\r\n\r\n") + chunked(1001), 413, "other", true},
		{"chunked huge chunk", post("/up", "Transfer-Encoding: chunked\r\n\r\n") + "7fffffffffffffff\r\n" + strings.Repeat("d", 2000), 413, "other", true},
		{"chunked at the limit", post("/up", "Transfer-Encoding: chunked\r\n\r\n") + chunked(1000), 200, "other", true},
		{"route override", post("/small", "Content-Length: 101\r\n\r\n") + strings.Repeat("c", 101), 413, "small", false},
		{"route override chunked", post("/small", "Transfer-Encoding: chunked\r\n\r\n") + chunked(101), 413, "small", true},
		{"target over 8 KiB", "GET /" + strings.Repeat("u", 8192) + " HTTP/1.1\r\nHost: gw\r\nAccept: application/problem+json\r\n\r\n", 414, "", false},
		{"target at 8 KiB", "GET /" + strings.Repeat("u", 8191) + " HTTP/1.1\r\nHost: gw\r\n\r\n", 200, "other", true},
		{"query over 8 KiB", "GET /q?" + strings.Repeat("q", 8192) + " HTTP/1.1\r\nHost: gw\r\nAccept: application/problem+json\r\n\r\n", 414, "", false},
	}
	for _, engine := range engines {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, yaml, up.url)
				resp, body, err := exchangeRaw(t, gw.addr, tc.raw)
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				if resp.StatusCode != tc.status {
					t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.status, body)
				}
				if tc.status != 200 {
					if want := fmt.Sprintf(`"status":%d`, tc.status); !strings.Contains(body, want) {
						t.Errorf("body = %s, want a problem with %s", body, want)
					}
					// The body (or what follows the head) is not read: the
					// connection ends with the answer.
					if !resp.Close {
						t.Errorf("a %d answer without Connection: close", tc.status)
					}
				}
				if got := gw.requests(tc.route, strconv.Itoa(tc.status)); got != 1 {
					t.Errorf("requests_total{route=%q,code=%d} = %v, want 1", tc.route, tc.status, got)
				}
				if arrived, _, _ := up.counts(); !tc.forwarded && arrived != 0 {
					t.Errorf("upstream got %d requests, want none", arrived)
				}
				if _, _, _ = up.counts(); tc.status == 200 && body == "" {
					t.Errorf("empty answer from the upstream")
				}
			})
		}
	}
}

func TestSilentBodyIs408(t *testing.T) {
	tests := []struct {
		name, yaml, raw string
	}{
		{"body_read_timeout, nothing sent", `
server: {body_read_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
`, "POST /up HTTP/1.1\r\nHost: gw\r\nContent-Length: 1000\r\nAccept: application/problem+json\r\n\r\n"},
		{"body_read_timeout, part sent", `
server: {body_read_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
`, "POST /up HTTP/1.1\r\nHost: gw\r\nContent-Length: 100000\r\nAccept: application/problem+json\r\n\r\n" + strings.Repeat("p", 40000)},
		{"body_read_timeout, chunked", `
server: {body_read_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
`, "POST /up HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\nAccept: application/problem+json\r\n\r\n10\r\n0123456789abcdef\r\n"},
		{"the route's total timeout covers the body", `
upstreams: {api: {url: "${UP}", timeouts: {total: 300ms}}}
`, "POST /up HTTP/1.1\r\nHost: gw\r\nContent-Length: 1000\r\nAccept: application/problem+json\r\n\r\n"},
	}
	for _, engine := range engines {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, tc.yaml, up.url)
				resp, body, err := exchangeRaw(t, gw.addr, tc.raw)
				if err != nil {
					t.Fatalf("exchange: %v (want a 408 answer)", err)
				}
				if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, `"status":408`) {
					t.Errorf("answer %d %s, want a 408 problem", resp.StatusCode, body)
				}
				if !resp.Close {
					t.Errorf("answer without Connection: close")
				}
				if got := gw.requests("default", "408"); got != 1 {
					t.Errorf("requests_total{code=408} = %v, want 1", got)
				}
				if got := scrape(gw.admin, `floodgate_upstream_duration_seconds_count{route="default"}`); got > 0 {
					t.Errorf("upstream_duration_seconds_count = %v, want no upstream response counted", got)
				}
			})
		}
	}
}

// TestSlowReaderIsCutOff: a client that stops reading a long answer has
// its connection closed after write_idle_timeout, and the upstream's
// answer is cut off with it rather than held open.
func TestSlowReaderIsCutOff(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			upstreamDone := make(chan int64, 1)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				chunk := []byte(strings.Repeat("z", 32<<10))
				var n int64
				for {
					k, err := w.Write(chunk)
					n += int64(k)
					if err != nil {
						break
					}
				}
				upstreamDone <- n
			}))
			t.Cleanup(up.Close)
			gw := startEngine(t, engine, `
server: {write_idle_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
`, up.URL)
			c, err := net.Dial("tcp", gw.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET /download HTTP/1.1\r\nHost: gw\r\n\r\n")
			// The client reads nothing until the upstream's answer has
			// ended: the socket buffers fill, and the gateway's write
			// waits.
			var n int64
			select {
			case n = <-upstreamDone:
			case <-time.After(30 * time.Second): // a bound, not a measure
				t.Fatalf("the upstream's answer is still held open: the gateway never cut the slow reader off")
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
			got, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the client's connection is still open after %d bytes", got)
			}
			if got >= n {
				t.Errorf("client read %d bytes of %d: the answer was not cut off", got, n)
			}
		})
	}
}

func TestRequestBuffering(t *testing.T) {
	const yaml = `
server: {request_buffer_bytes: 4096}
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: buffered, path: /buffered, upstream: api, request_buffering: "on"}
  - {name: streamed, path: /streamed, upstream: api}
`
	tests := []struct {
		name, raw, want string
		status          int
	}{
		{"in memory", "POST /buffered HTTP/1.1\r\nHost: gw\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("m", 100), "100", 200},
		{"in memory, chunked", "POST /buffered HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(1000), "1000", 200},
		{"in a temporary file", "POST /buffered HTTP/1.1\r\nHost: gw\r\nContent-Length: 200000\r\n\r\n" + strings.Repeat("f", 200000), "200000", 200},
		{"in a temporary file, chunked", "POST /buffered HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(100000), "100000", 200},
		{"empty, chunked", "POST /buffered HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "0", 200},
		{"malformed, never forwarded", "POST /buffered HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n" + "5\r\nhelloXY0\r\n\r\n", "", 400},
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the temporary files go
	for _, engine := range engines {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, yaml, up.url)
				resp, body, err := exchangeRaw(t, gw.addr, tc.raw)
				if err != nil {
					t.Fatalf("exchange: %v", err)
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("temporary files left: %v", left)
				}
				if resp.StatusCode != tc.status || tc.status == 200 && body != tc.want {
					t.Errorf("answer %d %q, want %d %q (bytes the upstream read)", resp.StatusCode, body, tc.status, tc.want)
				}
				if arrived, _, _ := up.counts(); tc.status != 200 && arrived != 0 {
					t.Errorf("upstream got %d requests, want none", arrived)
				}
			})
		}
	}
}

// TestRequestBufferingWithoutATemporaryDirectory: where the temporary
// file of a body beyond server.request_buffer_bytes cannot be created (a
// read-only container without /tmp), the request is answered 500, never
// forwarded, and the log says why, naming the route and the directory.
func TestRequestBufferingWithoutATemporaryDirectory(t *testing.T) {
	const yaml = `
server: {request_buffer_bytes: 4096}
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: buffered, path: /buffered, upstream: api, request_buffering: "on"}
`
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	t.Setenv("TMPDIR", missing)
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			up := newCountingUpstream(t)
			var log lockedBuffer
			gw := startEngineLogging(t, engine, yaml, up.url, &log)
			// In memory: no file needed, forwarded.
			resp, _, err := exchangeRaw(t, gw.addr, "POST /buffered HTTP/1.1\r\nHost: gw\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("m", 100))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("a body in memory: %v %v, want 200", resp, err)
			}
			resp, _, err = exchangeRaw(t, gw.addr, "POST /buffered HTTP/1.1\r\nHost: gw\r\nContent-Length: 20000\r\n\r\n"+strings.Repeat("f", 20000))
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if resp.StatusCode != 500 {
				t.Errorf("a body for a temporary file: answer %d, want 500", resp.StatusCode)
			}
			if arrived, _, _ := up.counts(); arrived != 1 {
				t.Errorf("upstream got %d requests, want 1 (the body in memory alone)", arrived)
			}
			var line map[string]any
			for l := range strings.SplitSeq(log.String(), "\n") {
				if strings.Contains(l, "temporary file") {
					if err := json.Unmarshal([]byte(l), &line); err != nil {
						t.Fatalf("log line %q: %v", l, err)
					}
				}
			}
			if line == nil {
				t.Fatalf("no log line says why the request was answered 500; the log:\n%s", log.String())
			}
			if line["level"] != "ERROR" || line["route"] != "buffered" || !strings.Contains(fmt.Sprint(line["error"]), missing) {
				t.Errorf("log line %v: want level ERROR, route buffered, the error naming %s", line, missing)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer that the gateway's goroutines write
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSlowUploadsNeverReachTheUpstream: many clients that send part of
// their body and then wait are all being read by the gateway (each in
// flight there), and none of them is in flight at the upstream; once they
// finish, every one is forwarded whole.
func TestSlowUploadsNeverReachTheUpstream(t *testing.T) {
	n := 5000
	// 2 descriptors per upload in this process, and some to spare: the
	// most the descriptor limit allows, if under 5,000.
	if l := openFilesLimit(); l > 0 && uint64(2*n+256) > l {
		n = int((l - 256) / 2)
		t.Logf("%d slow uploads: the most the open files limit (%d) allows", n, l)
	}
	if raceEnabled {
		n = 500 // the race detector's goroutine limit
	}
	if testing.Short() {
		n = 200
	}
	const size = 50000
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			up := newCountingUpstream(t)
			gw := startEngine(t, engine, `
upstreams: {api: {url: "${UP}"}}
routes: [{name: upload, path: /upload, upstream: api, request_buffering: "on"}]
`, up.url)
			head := fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: gw\r\nContent-Length: %d\r\n\r\n", size)
			part := strings.Repeat("s", 1000)
			conns := make([]net.Conn, 0, n)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for range n {
				c, err := net.Dial("tcp", gw.addr)
				if err != nil {
					t.Fatalf("dial after %d uploads: %v", len(conns), err)
				}
				conns = append(conns, c)
				if _, err := io.WriteString(c, head+part); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			inflight := `floodgate_inflight_requests`
			for i := 0; scrape(gw.admin, inflight) < float64(n); i++ {
				if i == 6000 { // a bound (60 s), not a measure
					t.Fatalf("%v of %d uploads in flight at the gateway", scrape(gw.admin, inflight), n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if arrived, _, _ := up.counts(); arrived != 0 {
				t.Fatalf("%d of %d slow uploads reached the upstream, want 0", arrived, n)
			}
			rest := strings.Repeat("s", size-len(part))
			for i, c := range conns {
				c.SetDeadline(time.Now().Add(60 * time.Second)) // a bound, not a measure
				if _, err := io.WriteString(c, rest); err != nil {
					t.Fatalf("upload %d: %v", i, err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("upload %d: %v", i, err)
				}
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || string(b) != strconv.Itoa(size) {
					t.Fatalf("upload %d: %d %q, want 200 %d", i, resp.StatusCode, b, size)
				}
			}
			if arrived, _, _ := up.counts(); arrived != n {
				t.Errorf("upstream got %d uploads, want %d", arrived, n)
			}
		})
	}
}

// TestRefusedBodyEndsTheConnection holds every engine to its
// Connection: close when a request is answered with its body left unread
// and the client sends nothing more: the connection ends after the
// answer. Go's server (server.engine: net/http) would otherwise wait, with
// no deadline, for up to 256 KiB of the body it means to drop.
func TestRefusedBodyEndsTheConnection(t *testing.T) {
	const yaml = `
server: {max_body_bytes: 1000, body_read_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: buffered, path: /buf, upstream: api, request_buffering: "on"}
  - {name: other, path: "/{rest...}", upstream: api}
`
	post := func(path, framing string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAccept: application/problem+json\r\n" + framing
	}
	tests := []struct {
		name   string
		raw    string
		status int
	}{
		{"declared length over the limit, nothing sent", post("/up", "Content-Length: 1001\r\n\r\n"), 413},
		{"declared length over the limit, 100-continue", post("/up", "Content-Length: 1001\r\nExpect: 100-continue\r\n\r\n"), 413},
		{"chunked over the limit, then silent", post("/up", "Transfer-Encoding: chunked\r\n\r\n") + "400\r\n" + strings.Repeat("c", 0x400) + "\r\n", 413},
		{"buffered chunked over the limit, then silent", post("/buf", "Transfer-Encoding: chunked\r\n\r\n") + "400\r\n" + strings.Repeat("c", 0x400) + "\r\n", 413},
		{"silent body", post("/up", "Content-Length: 500\r\n\r\n") + "part", 408},
		{"target too long, body never sent", "POST /" + strings.Repeat("u", 8192) + " HTTP/1.1\r\nHost: gw\r\nContent-Length: 500\r\n\r\n", 414},
	}
	for _, engine := range engines {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, yaml, up.url)
				c, err := net.Dial("tcp", gw.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
				if _, err := io.WriteString(c, tc.raw); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != tc.status || !resp.Close {
					t.Fatalf("answer %d (Connection: close %v), want %d with Connection: close", resp.StatusCode, resp.Close, tc.status)
				}
				// The client sends nothing more: the gateway must end the
				// connection, not wait for the rest of the body.
				rest, err := io.ReadAll(br)
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						t.Fatalf("the connection stayed open after the %d answer", tc.status)
					}
				}
				if len(rest) > 0 {
					t.Errorf("%d bytes after the answer: %.60q", len(rest), rest)
				}
			})
		}
	}
}

// TestCutOffAnswerIsCounted: an answer whose head went to the client and
// whose body was cut off (here the upstream closes mid-body) is counted in
// floodgate_requests_total with the status sent, as the access log keeps
// it, on either engine.
func TestCutOffAnswerIsCounted(t *testing.T) {
	up := testnet.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nonly ten b")
		c.Close()
	})
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			gw := startEngine(t, engine, "upstreams: {api: {url: \"${UP}\"}}\n", "http://"+up)
			resp, body, err := exchangeRaw(t, gw.addr, "GET /x HTTP/1.1\r\nHost: gw\r\n\r\n")
			if err != nil {
				t.Fatalf("exchange: %v", err)
			}
			if resp.StatusCode != 200 || len(body) >= 1000 {
				t.Fatalf("answer %d with %d bytes, want a 200 cut off", resp.StatusCode, len(body))
			}
			if got := gw.requests("default", "200"); got != 1 {
				t.Errorf("requests_total{code=200} = %v, want 1", got)
			}
			if got := scrape(gw.admin, `floodgate_upstream_duration_seconds_count{route="default"}`); got != 1 {
				t.Errorf("upstream_duration_seconds_count = %v, want 1", got)
			}
		})
	}
}

// TestRefusedRequestsBodyIsBounded: a request refused before its body is
// read (a rule's 403 or 429, a 404) whose client declared a body and
// sends none gets its answer after body_read_timeout, and its connection
// ends: both servers read such a body before they answer, and would wait
// for it without end. A client that sends its body keeps its connection.
func TestRefusedRequestsBodyIsBounded(t *testing.T) {
	const yaml = `
server: {body_read_timeout: 300ms}
upstreams: {api: {url: "${UP}"}}
routes:
  - {name: api, path: "/api/{rest...}", upstream: api}
rules:
  - {name: no-deny, when: 'request.path == "/api/deny"', action: deny}
  - {name: tight, when: 'request.path == "/api/tight"', limits: ["1/1h"]}
`
	head := func(path string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: gw\r\nAccept: application/problem+json\r\nContent-Length: 1000\r\n\r\n"
	}
	tests := []struct {
		name   string
		raw    string
		status int
	}{
		{"denied", head("/api/deny"), 403},
		{"over a limit", head("/api/tight") + strings.Repeat("x", 1000) + head("/api/tight"), 429},
		{"no route", head("/elsewhere"), 404},
		{"chunked, denied", "POST /api/deny HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n", 403},
	}
	for _, engine := range engines {
		for _, tc := range tests {
			t.Run(engine+"/"+tc.name, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, yaml, up.url)
				c, err := net.Dial("tcp", gw.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
				if _, err := io.WriteString(c, tc.raw); err != nil {
					t.Fatal(err)
				}
				all, err := io.ReadAll(c)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("no end of the connection; got %.80q", all)
				}
				if want := fmt.Sprintf("HTTP/1.1 %d ", tc.status); !strings.Contains(string(all), want) {
					t.Errorf("got %.200q, want a %d answer", all, tc.status)
				}
			})
		}
		t.Run(engine+"/body sent", func(t *testing.T) {
			up := newCountingUpstream(t)
			gw := startEngine(t, engine, yaml, up.url)
			raw := head("/api/deny") + strings.Repeat("x", 1000) + "GET /api/deny HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n"
			c, err := net.Dial("tcp", gw.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
			io.WriteString(c, raw)
			all, _ := io.ReadAll(c)
			if n := strings.Count(string(all), "HTTP/1.1 403 "); n != 2 {
				t.Errorf("%d answers on the connection, want 2: %.300q", n, all)
			}
		})
	}
}
