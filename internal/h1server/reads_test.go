package h1server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// countingListener counts the reads on the connections it accepts.
type countingListener struct {
	net.Listener
	reads *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{c, l.reads}, err
}

type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// TestOneReadPerRequest: a request that arrives in one piece costs one
// read from the connection (system calls are most of a forwarded
// request's time). A read limit of one byte while waiting for the next
// request once made it two.
func TestOneReadPerRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go s.Serve(countingListener{ln, &reads})
	defer s.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	const n = 20
	for range n {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
	}
	// n reads for n requests, and the one waiting for the next; a few
	// more if the network split a request.
	if got := reads.Load(); got > n+3 {
		t.Errorf("%d reads for %d requests, want about one each", got, n)
	}
}
