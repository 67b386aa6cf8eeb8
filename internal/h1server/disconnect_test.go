package h1server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Handlers armed at different times on many connections share the
// server's one watch: each client's going away cancels its own request
// and no other, whatever the order, and the watch holds nothing once the
// handlers have returned.
func TestDisconnectWatchManyConnections(t *testing.T) {
	const n = 6
	type verdict struct {
		conn int
		err  error
	}
	entered := make(chan int, n)
	got := make(chan verdict, n)
	s := &Server{ErrorLog: quietLog, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		num, long := strings.CutPrefix(r.URL.Path, "/long/")
		if !long {
			return // a short request: armed and disarmed at once
		}
		i, _ := strconv.Atoi(num)
		entered <- i
		got <- verdict{i, contextEnd(r)}
	})}
	addr, _ := serveKind(t, s, nil)
	conns := make([]net.Conn, n)
	for i := range n {
		c, br := dial(t, addr)
		conns[i] = c
		io.WriteString(c, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
		if res, _ := readAnswer(t, br, "GET"); res.StatusCode != 200 {
			t.Fatalf("short request: %d", res.StatusCode)
		}
		// The short request's handler left the watch as it returned:
		// what it holds is at most the long handlers armed so far.
		if w := watched(s); w > i {
			t.Fatalf("%d handlers watched with %d long ones running", w, i)
		}
		io.WriteString(c, "GET /long/"+strconv.Itoa(i)+" HTTP/1.1\r\nHost: x\r\n\r\n")
		wait(t, entered, "a long handler")
		if i == n/2 {
			// The later ones are armed a watch period after the first.
			time.Sleep(DisconnectCheck)
		}
	}
	// Closed in reverse order, one verdict at a time: only the closed
	// connection's request may end.
	for i := n - 1; i >= 0; i-- {
		conns[i].Close()
		v := wait(t, got, "a handler's verdict")
		if v.conn != i || !errors.Is(v.err, context.Canceled) {
			t.Fatalf("after closing connection %d: connection %d's handler ended with %v", i, v.conn, v.err)
		}
	}
	if w := watched(s); w != 0 {
		t.Errorf("%d handlers still watched after all returned", w)
	}
}

func watched(s *Server) int {
	s.disconnects.mu.Lock()
	defer s.disconnects.mu.Unlock()
	return len(s.disconnects.armed)
}
