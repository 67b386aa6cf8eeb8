package h1server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/listen"
	"github.com/floodgate/floodgate/internal/rawio"
)

// startRawServer serves h as floodgate serve does: on raw connections
// (rawio), under the listeners' own wrappers.
func startRawServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(listen.WriteIdle(rawio.Listener(ln), time.Minute))
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func pathEcho(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) }

// TestNextRequestWaitFindsTheConnection: the wait for a keep-alive
// client's next request reaches rawio's connection under the listeners'
// wrappers.
func TestNextRequestWaitFindsTheConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	nc, err := listen.WriteIdle(rawio.Listener(ln), time.Minute).Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, ok := findNextAwaiter(nc).(*rawio.Conn); !ok {
		t.Fatalf("findNextAwaiter(%T) = %T, want the *rawio.Conn underneath", nc, findNextAwaiter(nc))
	}
	if a := findNextAwaiter(&net.TCPConn{}); a != nil {
		t.Fatalf("findNextAwaiter of a plain connection = %T, want nil", a)
	}
}

// TestKeepAliveOnRawConnections: request after request on one connection,
// each waiting for the client without a read first, pipelined ones too,
// then the client's end of the connection (sent with its last request)
// closes the server's.
func TestKeepAliveOnRawConnections(t *testing.T) {
	addr := startRawServer(t, &Server{Handler: http.HandlerFunc(pathEcho), IdleTimeout: time.Minute})
	c, br := dialT(t, addr)
	for i := range 50 {
		fmt.Fprintf(c, "GET /r%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
		if code, body := answerOf(t, br); code != 200 || body != fmt.Sprintf("/r%d", i) {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	io.WriteString(c, "GET /p1 HTTP/1.1\r\nHost: x\r\n\r\nGET /p2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"/p1", "/p2"} {
		if code, body := answerOf(t, br); code != 200 || body != want {
			t.Fatalf("pipelined: %d %q, want %q", code, body, want)
		}
	}
	io.WriteString(c, "GET /last HTTP/1.1\r\nHost: x\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	if code, body := answerOf(t, br); code != 200 || body != "/last" {
		t.Fatalf("last: %d %q", code, body)
	}
	// The server sees the end before its idle timeout (a minute; the
	// safety deadline on c is 20 s).
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the last answer: %v, want the server's end (io.EOF)", err)
	}
}
