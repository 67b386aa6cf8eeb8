package forward

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/testnet"
)

// client is one keep-alive connection to the front server, sending
// requests one after another.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialClient(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// get sends GET path and returns the answer's body ("" and false when the
// connection ended).
func (cl *client) get(path string) (string, bool) {
	cl.c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang, never a measure
	if _, err := io.WriteString(cl.c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "", false
	}
	res, err := http.ReadResponse(cl.br, nil)
	if err != nil {
		return "", false
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	return string(b), err == nil
}

func answer(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

var reuseModes = []struct {
	name string
	mode Reuse
}{{"shared", ReuseShared}, {"per_client", ReusePerClient}, {"none", ReuseNone}}

// TestUnsolicitedAnswerReachesNoOtherClient: an upstream that, on each
// connection's second request, first writes an answer nobody asked for
// ("extra for" the first request) and then the right one. With
// connection_reuse shared, client B's request rides the connection client
// A's did, and B gets the answer made for A: the threat, shown. With
// per_client and none, B's request never rides A's connection.
// Deterministic: the unsolicited answer is written only once B's request
// has reached the upstream, so no check before reuse can see it.
func TestUnsolicitedAnswerReachesNoOtherClient(t *testing.T) {
	for _, m := range reuseModes {
		for _, fe := range frontEngines {
			t.Run(m.name+"/"+fe.name, func(t *testing.T) {
				unsolicitedAnswerReachesNoOtherClient(t, m.mode, fe.front)
			})
		}
	}
}

// frontEngines serve the forwarder as `floodgate serve` may: Go's server,
// or floodgate's (package h1server), which put each client connection's
// local address in its requests' contexts (ClientConn) alike.
var frontEngines = []struct {
	name  string
	front func(t *testing.T, h http.Handler) string
}{
	{"net/http", func(t *testing.T, h http.Handler) string { return hostOf(front(t, h)) }},
	{"floodgate", func(t *testing.T, h http.Handler) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := &h1server.Server{Handler: h}
		go s.Serve(ln)
		t.Cleanup(func() { s.Close() })
		return ln.Addr().String()
	}},
}

func unsolicitedAnswerReachesNoOtherClient(t *testing.T, mode Reuse, front func(*testing.T, http.Handler) string) {
	url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, prev string) {
		if n == 2 {
			io.WriteString(c, answer("extra for "+prev))
		}
		io.WriteString(c, answer("for "+r.URL.Path))
	})
	f := newForwarder(t, url, Options{Reuse: mode}, newErrorLog())
	addr := front(t, f)
	a, b := dialClient(t, addr), dialClient(t, addr)
	if got, _ := a.get("/a1"); got != "for /a1" {
		t.Fatalf("A got %q", got)
	}
	got, _ := b.get("/b1")
	if mode == ReuseShared {
		if got != "extra for /a1" {
			t.Errorf("shared: B got %q; the test expects the threat to show (A's extra answer)", got)
		}
		return
	}
	if got != "for /b1" {
		t.Errorf("B got %q, want its own answer", got)
	}
	// A's connection (per_client) then carries A's next request: the
	// extra answer is A's own, found before it is taken for the answer,
	// or taken by A at worst; never B's.
	if got, _ := a.get("/a2"); got != "for /a2" && got != "extra for /a1" {
		t.Errorf("A got %q", got)
	}
}

// scriptedConnUpstream is a raw upstream that tells fn the number of the
// request on its connection and the previous request's path.
func scriptedConnUpstream(t *testing.T, fn func(c net.Conn, n int, r *http.Request, prev string)) string {
	t.Helper()
	return scriptedUpstreamConn(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		prev := ""
		for n := 1; ; n++ {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			fn(c, n, r, prev)
			prev = r.URL.Path
		}
	})
}

func scriptedUpstreamConn(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	return "http://" + testnet.Serve(t, serve)
}

// TestUnsolicitedAnswersUnderLoad: two clients at once, each on its own
// connection, thousands of requests, and an upstream that writes an
// answer nobody asked for after every third one, at whatever moment its
// write lands. With per_client and none, no client ever receives an
// answer made for the other.
func TestUnsolicitedAnswersUnderLoad(t *testing.T) {
	const perClient = 1500
	for _, m := range reuseModes[1:] {
		t.Run(m.name, func(t *testing.T) {
			var unsolicited atomic.Int64
			url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
				io.WriteString(c, answer("for "+r.URL.Path))
				if n%3 == 0 {
					io.WriteString(c, answer("extra for "+r.URL.Path))
				}
			})
			f := newForwarder(t, url, Options{Reuse: m.mode, OnUnsolicited: func() { unsolicited.Add(1) }}, newErrorLog())
			fs := front(t, f)
			var cross, own atomic.Int64
			twoClients(t, hostOf(fs), perClient, func(name, path, got string, ok bool) {
				switch {
				case !ok:
				case !strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(got, "extra "), "for "), "/"+name+"/"):
					cross.Add(1)
					t.Errorf("client %s, %s: got %q", name, path, got)
				case strings.HasPrefix(got, "extra "):
					own.Add(1)
				}
			})
			t.Logf("%s: %d answers to the other client, %d stale answers of a client's own, %d unsolicited answers found",
				m.name, cross.Load(), own.Load(), unsolicited.Load())
			if cross.Load() != 0 {
				t.Errorf("%s: %d answers reached the other client", m.name, cross.Load())
			}
		})
	}
}

// TestAnswersReachTheirClient: with an upstream that answers each request
// once, two clients at once, thousands of requests, in every mode: each
// client receives only the answers made for its own requests.
func TestAnswersReachTheirClient(t *testing.T) {
	const perClient = 1500
	for _, m := range reuseModes {
		t.Run(m.name, func(t *testing.T) {
			url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
				io.WriteString(c, answer("for "+r.URL.Path))
			})
			f := newForwarder(t, url, Options{Reuse: m.mode}, newErrorLog())
			fs := front(t, f)
			var wrong, answered atomic.Int64
			twoClients(t, hostOf(fs), perClient, func(name, path, got string, ok bool) {
				if !ok {
					t.Errorf("client %s, %s: no answer", name, path)
					return
				}
				answered.Add(1)
				if got != "for "+path {
					wrong.Add(1)
					t.Errorf("client %s, %s: got %q", name, path, got)
				}
			})
			if n := answered.Load(); n != 2*perClient || wrong.Load() != 0 {
				t.Errorf("%s: %d answers, %d of them not the request's own", m.name, n, wrong.Load())
			}
		})
	}
}

// twoClients runs clients a and b at once, each on its own keep-alive
// connection to addr, each sending GET /NAME/I for I below perClient;
// each answer is passed to got (ok false when the connection ended,
// after which the client dials again).
func twoClients(t *testing.T, addr string, perClient int, got func(name, path, body string, ok bool)) {
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := dialClient(t, addr)
			for i := range perClient {
				path := fmt.Sprintf("/%s/%d", name, i)
				body, ok := cl.get(path)
				got(name, path, body, ok)
				if !ok {
					cl = dialClient(t, addr)
				}
			}
		}()
	}
	wg.Wait()
}

// TestUnsolicitedCounted: bytes left after a complete response, and bytes
// that arrive on an idle pooled connection, are reported once each, and
// the connection is not reused.
func TestUnsolicitedCounted(t *testing.T) {
	arrived := make(chan struct{})
	url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
		switch r.URL.Path {
		case "/glued": // in the same write: buffered with the response
			io.WriteString(c, answer("glued")+answer("extra"))
		case "/later": // once the response has been read
			io.WriteString(c, answer("later"))
			<-arrived
			io.WriteString(c, answer("extra"))
		default:
			io.WriteString(c, answer("ok"))
		}
	})
	var unsolicited atomic.Int64
	f := newForwarder(t, url, Options{OnUnsolicited: func() { unsolicited.Add(1) }}, newErrorLog())
	fs := front(t, f)
	cl := dialClient(t, hostOf(fs))
	if got, _ := cl.get("/glued"); got != "glued" || unsolicited.Load() != 1 || f.pool.idleCount() != 0 {
		t.Fatalf("glued: got %q, %d unsolicited, %d idle; want glued, 1, 0", got, unsolicited.Load(), f.pool.idleCount())
	}
	if got, _ := cl.get("/later"); got != "later" {
		t.Fatalf("later: got %q", got)
	}
	close(arrived)
	// The extra answer is on its way to the idle connection: wait until
	// the connection shows it (bounded), then the next request must not
	// take it.
	for i := 0; i < 2000 && f.pool.idleCount() == 1 && !pendingBytes(f); i++ {
		time.Sleep(time.Millisecond)
	}
	if got, _ := cl.get("/next"); got != "ok" || unsolicited.Load() != 2 {
		t.Errorf("next: got %q, %d unsolicited; want ok, 2", got, unsolicited.Load())
	}
}

// pendingBytes reports whether the newest idle connection has bytes
// waiting, without taking them or counting them.
func pendingBytes(f *Forwarder) bool {
	f.pool.mu.Lock()
	defer f.pool.mu.Unlock()
	if len(f.pool.idle) == 0 {
		return false
	}
	c := f.pool.idle[len(f.pool.idle)-1]
	_, data := c.peek.alive()
	return data
}

// TestUnsolicitedOnIdleConnectionFound: bytes an upstream sends on a
// connection after its answer was read are found while the connection
// is idle, without a request to take it: counted, and the connection
// closed.
func TestUnsolicitedOnIdleConnectionFound(t *testing.T) {
	answered := make(chan struct{})
	url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
		io.WriteString(c, answer("ok"))
		<-answered
		io.WriteString(c, answer("extra"))
	})
	found := make(chan struct{}, 1)
	f := newForwarder(t, url, Options{OnUnsolicited: func() { found <- struct{}{} }}, newErrorLog())
	fs := front(t, f)
	if got, _ := dialClient(t, hostOf(fs)).get("/"); got != "ok" {
		t.Fatalf("got %q", got)
	}
	close(answered)
	select {
	case <-found:
	case <-time.After(20 * time.Second): // a hang, never a measure
		t.Fatal("the unsolicited answer on the idle connection was never found")
	}
	if n := f.pool.idleCount(); n != 0 {
		t.Errorf("%d idle connections left, want 0", n)
	}
}
