package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// TestSmugglingReachesNoUpstream sends request-smuggling payloads to a
// gateway served by each server engine, as `floodgate serve` serves it,
// and counts what its upstream receives: never the smuggled request.
func TestSmugglingReachesNoUpstream(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "up")
	}))
	t.Cleanup(up.Close)
	f, err := config.Parse("test.yaml", []byte("upstreams: {api: {url: \""+up.URL+"\"}}\n"), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	g, problems := gateway.New(f, gateway.Options{
		Store:   memory.New(memory.Options{}),
		Metrics: telemetry.NewMetrics("test"),
		Logger:  telemetry.NewLogger(io.Discard, "info"),
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.New: %v", problems)
	}
	const smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	payloads := map[string]string{
		"CL.TE":          "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 39\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
		"TE.CL":          "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\n" + smuggled + "\r\n0\r\n\r\n",
		"TE in HTTP/1.0": "POST /a HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled,
		"CONNECT":        "CONNECT up:80 HTTP/1.1\r\nHost: up:80\r\n\r\n" + smuggled,
		"chunked":        "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
	}
	servers := map[string]func(ln net.Listener) (stop func()){
		"floodgate": func(ln net.Listener) func() {
			s := &h1server.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
			go s.Serve(ln)
			return func() { s.Close() }
		},
		"net/http": func(ln net.Listener) func() {
			s := h1server.NewNetHTTPServer(&http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second})
			go s.Serve(ln)
			return func() { s.Close() }
		},
	}
	for engine, start := range servers {
		for name, raw := range payloads {
			t.Run(engine+"/"+name, func(t *testing.T) {
				mu.Lock()
				seen = nil
				mu.Unlock()
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer start(ln)()
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang, never a measure
				io.WriteString(c, raw)
				br := bufio.NewReader(c)
				answers := 0
				for {
					res, err := http.ReadResponse(br, nil)
					if err != nil {
						break
					}
					io.Copy(io.Discard, res.Body)
					answers++
				}
				mu.Lock()
				defer mu.Unlock()
				for _, s := range seen {
					if s == "GET /smuggled" {
						t.Fatalf("the upstream received the smuggled request (it saw %q)", seen)
					}
				}
				if answers != 1 || len(seen) > 1 {
					t.Errorf("%d answers, upstream saw %q; want 1 answer and at most the first request", answers, seen)
				}
			})
		}
	}
}
