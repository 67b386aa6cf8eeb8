package h1server

// A connection's life around its requests: a request body read after its
// handler returned, a broken upstream answer passed on as complete,
// concurrent 100 Continue writes, the first request's header timeout, what
// an idle connection keeps alive, and the unread rest of a body.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/forward"
)

// startServer serves h on a loopback port until the test ends.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func dialT(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(safetyDeadline))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func answerOf(t *testing.T, br *bufio.Reader) (int, string) {
	t.Helper()
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading an answer: %v", err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading an answer's body: %v", err)
	}
	return res.StatusCode, string(b)
}

// TestLateBodyReadFails: a goroutine the handler started reads the body
// after the handler returned, while the next request (on the same
// connection, or on another connection that got the pooled reader) is
// being served. It must get http.ErrBodyReadAfterClose, never the next
// request's bytes, and the next request must get its own body intact.
// (Before the fix: the late read returned "secret-of-user-B", or crashed
// the process when the next request had no body.)
func TestLateBodyReadFails(t *testing.T) {
	for _, tc := range []struct {
		name, first, second string
		sameConn            bool
	}{
		{"same-connection", "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nAAAAA",
			"POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\nsecret-of-user-B", true},
		{"same-connection-next-without-body", "POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nAAAAA",
			"GET /second HTTP/1.1\r\nHost: x\r\n\r\n", true},
		{"next-connection", "POST /first HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nAAAAA",
			"POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 24\r\n\r\nB's-password=hunter2&x=1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secondStarted := make(chan struct{})
			late := make(chan string, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/first":
					body := r.Body
					go func() {
						<-secondStarted
						buf := make([]byte, 64)
						n, err := body.Read(buf)
						late <- fmt.Sprintf("%q %v", buf[:n], err)
					}()
					io.WriteString(w, "first")
				default:
					close(secondStarted)
					got := <-late // the late read has happened
					b, err := io.ReadAll(r.Body)
					fmt.Fprintf(w, "late=%s own=%q err=%v", got, b, err)
				}
			})
			addr := startServer(t, &Server{Handler: h})
			c, br := dialT(t, addr)
			io.WriteString(c, tc.first)
			if code, body := answerOf(t, br); code != 200 || body != "first" {
				t.Fatalf("first: %d %q", code, body)
			}
			if !tc.sameConn {
				c, br = dialT(t, addr)
			}
			io.WriteString(c, tc.second)
			_, body := answerOf(t, br)
			wantOwn := `own=""`
			if i := strings.Index(tc.second, "\r\n\r\n"); i+4 < len(tc.second) {
				wantOwn = fmt.Sprintf("own=%q", tc.second[i+4:])
			}
			if want := fmt.Sprintf(`late="" %v %s err=<nil>`, http.ErrBodyReadAfterClose, wantOwn); body != want {
				t.Errorf("second answer %s, want %s", body, want)
			}
		})
	}
}

// TestBrokenUpstreamIsNotComplete: internal/forward (and ReverseProxy)
// abort an answer whose upstream broke mid-body only when the request's
// context holds http.ServerContextKey; without it, the client got a
// truncated body ended as if complete, on a connection kept alive.
func TestBrokenUpstreamIsNotComplete(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				// One chunk, then the upstream dies: no last chunk.
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"+
					"10\r\n[{\"id\":1},{\"id\":2\r\n")
			}(c)
		}
	}()
	u, _ := url.Parse("http://" + up.Addr().String())
	fwd, err := forward.New(u, forward.Options{OnError: func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusBadGateway)
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctxs := make(chan context.Context, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxs <- r.Context()
		fwd.ServeHTTP(w, r)
	})
	c, br := dialT(t, startServer(t, &Server{Handler: h}))
	io.WriteString(c, "GET /list HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	if err == nil {
		t.Errorf("a body the upstream broke off was delivered as complete: %q", body)
	}
	ctx := <-ctxs
	if _, ok := ctx.Value(http.ServerContextKey).(*http.Server); !ok {
		t.Error("no http.ServerContextKey in the request's context")
	}
	if a, ok := ctx.Value(http.LocalAddrContextKey).(net.Addr); !ok || a.String() != c.RemoteAddr().String() {
		t.Errorf("http.LocalAddrContextKey = %v, want %v", a, c.RemoteAddr())
	}
}

// TestContinueFromTwoGoroutines: a body read on one goroutine sends 100
// Continue while another (ReverseProxy's transport relaying an
// upstream's 100) calls WriteHeader(100): the race detector checks the
// locking; exactly one 100 Continue reaches the client, before the
// answer.
func TestContinueFromTwoGoroutines(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var wg sync.WaitGroup
		var got []byte
		wg.Add(2)
		go func() {
			defer wg.Done()
			got, _ = io.ReadAll(r.Body)
		}()
		go func() {
			defer wg.Done()
			w.WriteHeader(http.StatusContinue)
		}()
		wg.Wait()
		fmt.Fprintf(w, "got %q", got)
	})
	addr := startServer(t, &Server{Handler: h})
	for range 20 {
		c, br := dialT(t, addr)
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		line, err := br.ReadString('\n')
		if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
			t.Fatalf("first line %q %v, want 100 Continue", line, err)
		}
		if blank, _ := br.ReadString('\n'); blank != "\r\n" {
			t.Fatalf("after 100 Continue: %q", blank)
		}
		io.WriteString(c, "hello")
		if code, body := answerOf(t, br); code != 200 || body != `got "hello"` {
			t.Fatalf("answer %d %q (a second 100 Continue?)", code, body)
		}
		c.Close()
	}
}

// TestFirstRequestHasHeaderTimeout: a connection that sends nothing is
// closed after ReadHeaderTimeout, not after the (much longer) keep-alive
// idle timeout. (The safety deadline is far above both; only the closing
// is asserted.)
func TestFirstRequestHasHeaderTimeout(t *testing.T) {
	addr := startServer(t, &Server{
		Handler:           http.NotFoundHandler(),
		ReadHeaderTimeout: 50 * time.Millisecond,
		IdleTimeout:       time.Hour,
	})
	c, _ := dialT(t, addr)
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) {
		t.Errorf("a silent connection: read %v, want EOF (closed by the server)", err)
	}
}

// TestIdleConnectionKeepsNothing: between requests a connection holds
// no request, body or header of the last one.
func TestIdleConnectionKeepsNothing(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("X-Big", strings.Repeat("x", 1000))
		io.WriteString(w, "ok")
	})}
	c, br := dialT(t, startServer(t, s))
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Secret: s3cr3t\r\nContent-Length: 2\r\n\r\nhi")
	answerOf(t, br)
	// A plain head, read into the connection's reused buffers.
	io.WriteString(c, "GET /?k=secret HTTP/1.1\r\nHost: x\r\nX-Secret: s3cr3t\r\n\r\n")
	answerOf(t, br)
	var conn *conn
	for i := 0; ; i++ {
		s.mu.Lock()
		for k := range s.conns {
			conn = k
		}
		s.mu.Unlock()
		if conn != nil && conn.state.Load() == stateIdle {
			break
		}
		if i == 10000 {
			t.Fatal("the connection never went idle")
		}
		time.Sleep(time.Millisecond)
	}
	w := &conn.w
	if w.req != nil || w.body != nil || len(w.fields) != 0 || len(w.header) != 0 {
		t.Errorf("idle connection keeps req %v, body %v, fields %q, header %v", w.req != nil, w.body != nil, w.fields, w.header)
	}
	if r := conn.req; r != nil && (r.Header != nil || r.URL != nil || r.Method != "") {
		t.Errorf("idle connection keeps the request: %s %v %v", r.Method, r.URL, r.Header)
	}
	if b := conn.hb; b != nil && (len(b.header) != 0 || b.url != (url.URL{}) || slices.ContainsFunc(b.vals, func(v string) bool { return v != "" })) {
		t.Errorf("idle connection keeps the head's buffers: %v %v %q", b.header, b.url, b.vals)
	}
	for _, k := range w.keys[:cap(w.keys)] {
		if k != "" {
			t.Errorf("idle connection keeps header name %q", k)
		}
	}
}

// TestFullDuplexUnreadBodyIsNotARequest: a handler in
// full-duplex mode reads part of the body and answers; the rest of the
// body, shaped as a request, must never be parsed as one.
func TestFullDuplexUnreadBodyIsNotARequest(t *testing.T) {
	reached := make(chan string, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached <- r.URL.Path
		http.NewResponseController(w).EnableFullDuplex()
		io.CopyN(io.Discard, r.Body, 3)
		io.WriteString(w, "upload ok")
	})
	c, br := dialT(t, startServer(t, &Server{Handler: h}))
	smuggled := "GET /admin-smuggled HTTP/1.1\r\nHost: x\r\nX-Who: attacker\r\n\r\n"
	fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\nabc%s", 3+len(smuggled), smuggled)
	if code, body := answerOf(t, br); code != 200 || body != "upload ok" {
		t.Fatalf("answer %d %q", code, body)
	}
	if _, err := br.Peek(1); !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: %v, want the connection closed", err)
	}
	close(reached)
	for p := range reached {
		if p != "/upload" {
			t.Errorf("the rest of a body reached the handler as a request for %s", p)
		}
	}
}

// TestUnreadChunkedBodyGetsItsAnswer: a chunked upload
// answered without reading it (a 429, say) closes the connection, but
// only after the answer has had a chance to arrive: the server closes its
// writing side and reads on until the client leaves, instead of closing
// at once with unread input (the kernel would then reset the connection,
// and the client lose the answer). The client here reads the whole answer
// and sees the server's end of stream, never a reset.
func TestUnreadChunkedBodyGetsItsAnswer(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, "slow down")
	})
	c, br := dialT(t, startServer(t, &Server{Handler: h}))
	io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 64<<10, strings.Repeat("x", 64<<10))
	go func() {
		for range 64 { // 4 MiB the server never reads
			if _, err := io.WriteString(c, chunk); err != nil {
				return
			}
		}
	}()
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 429 || string(body) != "slow down" {
		t.Fatalf("answer %d %q %v, want 429 \"slow down\"", res.StatusCode, body, err)
	}
	if _, err := br.Peek(1); !errors.Is(err, io.EOF) {
		t.Errorf("after the answer: %v, want the server's end of stream", err)
	}
}
