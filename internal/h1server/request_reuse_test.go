package h1server

// The server reuses a connection's request, its context and buffers, and
// clears the head deadline lazily: nothing of one request may reach the
// next, and a shutdown or a deadline must not be undone by the reuse.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookListener wraps accepted connections in hookConn.
type hookListener struct {
	net.Listener
	hook *connHook
}

func (l hookListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &hookConn{Conn: c, hook: l.hook}, nil
}

// connHook holds the 100 Continue write until a read deadline in the past
// has been set (shut's interrupt), which makes the race deterministic.
type connHook struct {
	contWriting chan struct{} // closed when the 100 Continue write starts
	contRelease chan struct{} // the 100 Continue write waits for it
	pastSet     chan struct{} // closed when a deadline in the past is set
	once1       sync.Once
	once2       sync.Once
}

type hookConn struct {
	net.Conn
	hook *connHook
}

func (c *hookConn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), "100 Continue") {
		c.hook.once1.Do(func() { close(c.hook.contWriting) })
		<-c.hook.contRelease
	}
	return c.Conn.Write(p)
}

func (c *hookConn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	if !t.IsZero() && t.Before(time.Now()) {
		c.hook.once2.Do(func() { close(c.hook.pastSet) })
	}
	return err
}

// A body read by a goroutine of the handler's is interrupted when the
// handler returns (requestBody.shut sets a deadline in the past). The lazy
// clearing of the head's deadline before a handler's read must not undo
// that interrupt: the read would then block with no deadline, shut would
// wait for it, and the answer would never be sent.
func TestShutInterruptIsNotUndone(t *testing.T) {
	hook := &connHook{contWriting: make(chan struct{}), contRelease: make(chan struct{}), pastSet: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second, ErrorLog: quietLog,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			go io.ReadAll(r.Body) // as the forwarder's body writer does
			<-hook.contWriting    // the goroutine is inside requestBody.Read, before connReader.Read
			io.WriteString(w, "early answer")
		}),
	}
	go s.Serve(hookListener{ln, hook})
	t.Cleanup(func() { s.Close() })
	go func() {
		<-hook.pastSet // shut interrupted the read
		close(hook.contRelease)
	}()
	c, br := dialT(t, ln.Addr().String())
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer (the server is stuck in shut, its read without a deadline): %v", err)
		}
		if res.StatusCode == http.StatusContinue {
			continue
		}
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(b) != "early answer" {
			t.Errorf("answer %d %q", res.StatusCode, b)
		}
		return
	}
}

// A read deadline a handler set (http.ResponseController) is not the next
// request's, even a pipelined one whose head is read without a deadline
// of its own: the next handler's disconnect watch still notices the client
// leaving (with the old deadline past, its read would time out instead).
func TestHandlerDeadlineDoesNotReachNextRequest(t *testing.T) {
	entered := make(chan struct{})
	got := make(chan error, 1)
	addr := startServer(t, &Server{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 10 * time.Second, ErrorLog: quietLog,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/first" {
				http.NewResponseController(w).SetReadDeadline(time.Now().Add(shortTimeout))
				return
			}
			close(entered)
			got <- contextEnd(r)
		})})
	c, _ := dialT(t, addr)
	io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n")
	wait(t, entered, "the second handler")
	pastShortTimeout()
	c.Close()
	if err := wait(t, got, "the second handler's verdict"); !errors.Is(err, context.Canceled) {
		t.Errorf("second handler's context: %v, want context.Canceled (the first handler's deadline reached it)", err)
	}
}

// A base context that ends (Server.BaseContext) ends the requests running
// under it, with its cause, as with net/http.
func TestBaseContextEndsRequests(t *testing.T) {
	base, cancel := context.WithCancelCause(context.Background())
	entered := make(chan struct{})
	res := make(chan error, 1)
	addr := startServer(t, &Server{ErrorLog: quietLog, BaseContext: func(net.Listener) context.Context { return base },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			select {
			case <-r.Context().Done():
				res <- context.Cause(r.Context())
			case <-time.After(safetyDeadline):
				res <- errors.New("request context not done before the safety deadline")
			}
		})})
	c, _ := dialT(t, addr)
	io.WriteString(c, get11)
	wait(t, entered, "the handler")
	cancel(errors.New("shutting down"))
	if err := wait(t, res, "the handler's verdict"); err == nil || err.Error() != "shutting down" {
		t.Errorf("Cause(request context) = %v, want the base's cause", err)
	}
}

// A head with many fields does not leave its (never shrinking) map and
// values with an idle connection: the next request gets new ones.
func TestIdleConnectionDropsALargeHeader(t *testing.T) {
	s := &Server{ErrorLog: quietLog, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	c, br := dialT(t, startServer(t, s))
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := range 200 {
		fmt.Fprintf(&b, "X-%d: v\r\n", i)
	}
	b.WriteString("\r\n")
	for _, head := range []string{get11, b.String()} { // the second is read into the reused buffers
		io.WriteString(c, head)
		answerOf(t, br)
	}
	conn := idleConn(t, s)
	if hb := conn.hb; hb == nil || hb.header != nil || cap(hb.vals) != 0 {
		t.Errorf("an idle connection keeps the buffers of a 200-field head")
	}
}

// idleConn returns s's only connection once it is between requests.
func idleConn(t *testing.T, s *Server) *conn {
	t.Helper()
	deadline := time.Now().Add(safetyDeadline)
	for {
		s.mu.Lock()
		var c *conn
		for k := range s.conns {
			c = k
		}
		s.mu.Unlock()
		if c != nil && c.state.Load() == stateIdle {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("safety deadline: the connection never went idle")
		}
		time.Sleep(time.Millisecond)
	}
}

// What a connection reuses (headBuffers): reading a head into buffers a
// previous head filled, and a handler then changed, gives what reading it
// into new ones gives.
func FuzzReusedHeadBuffers(f *testing.F) {
	f.Add("GET /a?x=1 HTTP/1.1\r\nHost: x\r\nCookie: a=1\r\nX: 1\r\nX: 2\r\n\r\n", "GET /b HTTP/1.1\r\nHost: y\r\nX: 3\r\n\r\n")
	f.Add("GET /a HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", "GET /%41 HTTP/1.0\r\nA: 9\r\n\r\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		hb := new(headBuffers)
		var ra http.Request
		if readPlainRequestInto(bufio.NewReaderSize(strings.NewReader(a), 4096), &ra, hb) {
			// What the gateway does to a request it forwards.
			ra.Header["Injected"] = []string{"z"}
			ra.URL.Path += "/changed"
		}
		hb.empty()
		var rb, fresh http.Request
		br1, br2 := bufio.NewReaderSize(strings.NewReader(b), 4096), bufio.NewReaderSize(strings.NewReader(b), 4096)
		br1.Peek(len(b))
		br2.Peek(len(b))
		ok1 := readPlainRequestInto(br1, &rb, hb)
		ok2 := readPlainRequestInto(br2, &fresh, nil)
		if ok1 != ok2 {
			t.Fatalf("read as plain: %v with reused buffers, %v with new ones", ok1, ok2)
		}
		if ok1 && (!headersEqual(rb.Header, fresh.Header) || *rb.URL != *fresh.URL) {
			t.Fatalf("reused: %v %v\nnew: %v %v", rb.Header, rb.URL, fresh.Header, fresh.URL)
		}
	})
}

func headersEqual(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || strings.Join(va, "\x00") != strings.Join(vb, "\x00") || len(va) != len(vb) {
			return false
		}
	}
	return true
}
