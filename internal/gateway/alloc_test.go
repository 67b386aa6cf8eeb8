package gateway_test

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// rawUpstream answers every request head it reads with the same small
// JSON answer, allocating nothing per request: what a test counts is the
// gateway's.
func rawUpstream(t *testing.T) string {
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"ok\":true,\"n\":1}")
	return "http://" + testnet.Serve(t, func(c net.Conn) {
		buf := make([]byte, 8<<10)
		n := 0
		for {
			m, err := c.Read(buf[n:])
			if err != nil {
				return
			}
			n += m
			if end := bytes.Index(buf[:n], []byte("\r\n\r\n")); end >= 0 {
				n = copy(buf, buf[end+4:n])
				if _, err := c.Write(answer); err != nil {
					return
				}
			} else if n == len(buf) {
				return
			}
		}
	})
}

// rawExchange sends req on c and reads one answer with a Content-Length
// into buf, allocating nothing; it returns the status code.
func rawExchange(t testing.TB, c net.Conn, req, buf []byte) int {
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		m, err := c.Read(buf[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += m
		end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
		if end < 0 {
			continue
		}
		head := buf[:end]
		i := bytes.Index(head, []byte("\r\nContent-Length: "))
		if i < 0 {
			t.Fatalf("answer without Content-Length: %q", head)
		}
		rest := head[i+len("\r\nContent-Length: "):]
		if j := bytes.IndexByte(rest, '\r'); j >= 0 {
			rest = rest[:j]
		}
		length, err := strconv.Atoi(string(rest))
		if err != nil {
			t.Fatalf("Content-Length %q", rest)
		}
		for n < end+4+length {
			m, err := c.Read(buf[n:])
			if err != nil {
				t.Fatal(err)
			}
			n += m
		}
		code, _ := strconv.Atoi(string(buf[9:12]))
		return code
	}
}

// TestRequestPathAllocations holds the allocations of one forwarded
// request — floodgate's server, MaveDB's six rules, the in-memory store,
// the forwarder — to a budget of 1, the head's string (docs/benchmarks.md
// tells what each step took away: the rules' conditions evaluated without
// CEL's interpreter, the upstream's fields and floodgate's RateLimit
// fields passed as lines, not a map, and the server's reused request).
// Client and upstream allocate nothing, so the count is the gateway's.
func TestRequestPathAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -race and -cover (scripts/test runs this without them)")
	}
	vars := map[string]string{"FLOODGATE_UPSTREAM": rawUpstream(t), "FLOODGATE_TRUSTED_PROXIES": ""}
	f, err := config.Load("../../bench/mavedb-bench.yaml", "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	metrics := telemetry.NewMetrics("test")
	store, closer, err := gateway.NewStore(&f.Config.Store, metrics, telemetry.NewLogger(io.Discard, "info"))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	g, problems := gateway.New(f, gateway.Options{Store: store, Metrics: metrics, Logger: telemetry.NewLogger(io.Discard, "info")})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	front := newFront(t, g)
	c, err := net.Dial("tcp", front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /api/v1/score-sets/urn:mavedb:00000001-a-1 HTTP/1.1\r\nHost: api.example\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\nAccept: */*\r\n\r\n")
	buf := make([]byte, 16<<10)
	for range 200 { // pools, the upstream connection, first-use caches
		if code := rawExchange(t, c, req, buf); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	allocs := testing.AllocsPerRun(2000, func() { rawExchange(t, c, req, buf) })
	t.Logf("%.0f allocations a request", allocs)
	if allocs > 1 {
		t.Errorf("%.0f allocations a forwarded request, want at most 1", allocs)
	}
}
