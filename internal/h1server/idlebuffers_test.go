package h1server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// sizeListener records the size of every read its connections make, per
// connection in accept order.
type sizeListener struct {
	net.Listener
	mu    sync.Mutex
	reads [][]int
}

func (l *sizeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads = append(l.reads, nil)
	return &sizeConn{Conn: c, l: l, i: len(l.reads) - 1}, nil
}

// oneByteReads returns how many reads of one byte connection i made.
func (l *sizeListener) oneByteReads(i int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.reads[i] {
		if r == 1 {
			n++
		}
	}
	return n
}

type sizeConn struct {
	net.Conn
	l *sizeListener
	i int
}

func (c *sizeConn) Read(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.reads[c.i] = append(c.l.reads[c.i], len(p))
	c.l.mu.Unlock()
	return c.Conn.Read(p)
}

// serveSized serves s on a loopback listener that records read sizes.
func serveSized(t *testing.T, s *Server) *sizeListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := &sizeListener{Listener: ln}
	go s.Serve(sl)
	t.Cleanup(func() { s.Close() })
	return sl
}

// requests sends n requests one after another on c, each once the
// previous one is answered, and checks the answers.
func requests(t *testing.T, c net.Conn, br *bufio.Reader, n int) {
	t.Helper()
	for range n {
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("answer %d %q", res.StatusCode, b)
		}
	}
}

func dialSized(t *testing.T, sl *sizeListener) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", sl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// TestWaitingConnectionHoldsNoBuffer: with more connections open than
// IdleBuffersUpTo, a connection waiting for a request reads its first
// byte into one byte of its own (its 4 KiB reader and 16 KiB writer back
// in the pools), then the rest of the request with a reader; with fewer,
// it keeps its reader and reads each request whole (TestOneReadPerRequest).
func TestWaitingConnectionHoldsNoBuffer(t *testing.T) {
	sl := serveSized(t, &Server{Handler: okHandler, IdleBuffersUpTo: 1})
	a, abr := dialSized(t, sl)
	const n = 10
	requests(t, a, abr, n)
	// The disconnect watch reads one byte when a handler runs for
	// DisconnectCheck: at most once on a loaded machine.
	if got := sl.oneByteReads(0); got > 1 {
		t.Errorf("one connection open: %d one-byte reads for %d requests, want none", got, n)
	}
	// A second connection, answered once: both count now.
	b, bbr := dialSized(t, sl)
	requests(t, b, bbr, 1)
	before := sl.oneByteReads(0)
	requests(t, a, abr, n)
	// The wait that was under way when b arrived was a full read.
	if got := sl.oneByteReads(0) - before; got < n-1 {
		t.Errorf("two connections open: %d one-byte reads for %d requests, want one each", got, n)
	}
	// Pipelined requests, and a body, are read alike.
	if _, err := io.WriteString(a, "POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /x HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		res, err := http.ReadResponse(abr, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != "ok" {
			t.Fatalf("pipelined answer %d %q", res.StatusCode, b)
		}
	}
}
