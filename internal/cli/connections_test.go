package cli

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMaxConnections: connections beyond server.max_connections are
// closed at once and counted; a place freed is taken again.
func TestMaxConnections(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, strings.Replace(opsYAML(up.URL, "100/1m"), "server: {read_header_timeout: 300ms}",
		"server: {read_header_timeout: 1m, max_connections: 2}", 1))
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	// The readiness checks' connections may still be closing: each held
	// connection is one the server has answered on.
	for range 2 {
		c, err := net.Dial("tcp", g.pub)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.SetDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
		io.WriteString(c, "GET /a HTTP/1.1\r\nHost: gw\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d within the cap: %v", len(held), err)
		}
		resp.Body.Close()
	}
	over, err := net.Dial("tcp", g.pub)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(over, "GET /a HTTP/1.1\r\nHost: gw\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(over), nil); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the connection over the cap: %v, want it closed at once", err)
	}
	if got := g.metric("floodgate_connections_rejected_total"); got != 1 {
		t.Errorf("connections_rejected_total = %v, want 1", got)
	}
	// Logged too, rate-limited, without the client's address.
	var line string
	for _, l := range strings.Split(g.stderr.String(), "\n") {
		if strings.Contains(l, "server.max_connections are open") {
			line = l
		}
	}
	if !strings.Contains(line, `"count":1`) || !strings.Contains(line, `"max_connections":2`) || strings.Contains(line, "127.0.0.1") {
		t.Errorf("log line for the connection refused: %q, want one with count 1, max_connections 2 and no address", line)
	}
	held[0].Close()
	for i := 0; g.metric("floodgate_connections_open") > 1; i++ {
		if i == 1000 { // a bound (20 s), not a measure
			t.Fatalf("connections_open = %v after one closed, want 1", g.metric("floodgate_connections_open"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := g.status("/a"); code != 200 {
		t.Errorf("a new connection once one closed: %d, want 200", code)
	}
}
