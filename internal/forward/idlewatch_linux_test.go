package forward

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleConnectionClosedByUpstreamDropped: an upstream that closes a
// keep-alive connection after its answer (its own idle timeout) has the
// pooled connection dropped as the end arrives, without a request to
// take it, and not counted as unsolicited.
func TestIdleConnectionClosedByUpstreamDropped(t *testing.T) {
	answered := make(chan struct{})
	url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
		io.WriteString(c, answer("ok"))
		<-answered
		c.Close()
	})
	var unsolicited atomic.Int32
	f := newForwarder(t, url, Options{OnUnsolicited: func() { unsolicited.Add(1) }}, newErrorLog())
	fs := front(t, f)
	if got, _ := dialClient(t, hostOf(fs)).get("/"); got != "ok" {
		t.Fatalf("got %q", got)
	}
	if n := f.pool.idleCount(); n != 1 {
		t.Fatalf("%d idle connections, want 1", n)
	}
	close(answered)
	for deadline := time.Now().Add(20 * time.Second); f.pool.idleCount() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // a hang, never a measure
			t.Fatal("the upstream's end of an idle connection was never found")
		}
	}
	if n := unsolicited.Load(); n != 0 {
		t.Errorf("%d unsolicited, want 0: an upstream closing an idle connection sent nothing", n)
	}
}

// TestIdleWatchEndsWithThePool: the epoll set and its goroutine live
// while connections are pooled, and end when the pool is emptied, so a
// forwarder replaced by a reload leaves neither behind.
func TestIdleWatchEndsWithThePool(t *testing.T) {
	url := scriptedConnUpstream(t, func(c net.Conn, n int, r *http.Request, _ string) {
		io.WriteString(c, answer("ok"))
	})
	f := newForwarder(t, url, Options{}, newErrorLog())
	fs := front(t, f)
	cl := dialClient(t, hostOf(fs))
	for range 2 {
		if got, _ := cl.get("/"); got != "ok" {
			t.Fatalf("got %q", got)
		}
		watching := func() bool {
			f.pool.mu.Lock()
			defer f.pool.mu.Unlock()
			return f.pool.watch.epfd != 0
		}
		// The connection joins the set once idle for watchAfter.
		for deadline := time.Now().Add(20 * time.Second); !watching(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) { // a hang, never a measure
				t.Fatal("a connection is pooled, and nothing watches it")
			}
		}
		f.CloseIdle()
		if watching() {
			t.Fatal("the pool is empty, and its epoll set is still open")
		}
	}
}
