package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// guard bounds a read that must not wait for ever: a failure of the code
// under test shows as this deadline's error, not as a hung test.
const guard = 20 * time.Second

// heldPair returns a connection with its held read on and live (one read
// made, which left the socket empty), and its peer.
func heldPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	nc, peer := pair(t)
	c := nc.(*Conn)
	c.AwaitNext()
	if c.h.Load() == nil {
		t.Skip("no TCP_INQ on this kernel")
	}
	if _, err := peer.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(guard))
	buf := make([]byte, 64)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("first read: %q, %v", buf[:n], err)
	}
	return c, peer
}

func readString(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(guard))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf)
}

// until polls the connection's socket (TCP_INFO, FIONREAD) until cond
// holds: what the peer sent has arrived, whatever the scheduler did.
func until(t *testing.T, c *Conn, cond func(fd int) bool) {
	t.Helper()
	for deadline := time.Now().Add(guard); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ok := false
		c.rc.Control(func(fd uintptr) { ok = cond(int(fd)) })
		if ok {
			return
		}
	}
	t.Fatal("the peer's bytes never arrived")
}

// queued is the number of bytes waiting on socket fd (SIOCINQ, which is
// FIONREAD, which is TIOCINQ).
func queued(fd int) int {
	var v int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); e != 0 {
		return -1
	}
	return int(v)
}

// finReceived reports whether the peer's FIN has arrived on socket fd
// (TCP_INFO: CLOSE_WAIT).
func finReceived(fd int) bool {
	const tcpCloseWait = 8
	return tcpState(fd) == tcpCloseWait
}

// TestHeldReadExchanges: request after request, each read after an answer
// waits without trying the socket, and every byte arrives in order.
func TestHeldReadExchanges(t *testing.T) {
	c, peer := heldPair(t)
	done := make(chan error, 1)
	go func() { // the client: a request, then its answer, 200 times
		for i := range 200 {
			msg := []byte{'a' + byte(i%26), 'x', 'y'}
			if _, err := peer.Write(msg); err != nil {
				done <- err
				return
			}
			buf := make([]byte, 3)
			if _, err := io.ReadFull(peer, buf); err != nil || !bytes.Equal(buf, bytes.ToUpper(msg)) {
				done <- errors.New("wrong answer " + string(buf))
				return
			}
		}
		done <- peer.(*net.TCPConn).CloseWrite()
	}()
	for i := range 200 {
		c.AwaitNext()
		got := readString(t, c, 3)
		if want := string([]byte{'a' + byte(i%26), 'x', 'y'}); got != want {
			t.Fatalf("request %d: %q, want %q", i, got, want)
		}
		if _, err := c.Write(bytes.ToUpper([]byte(got))); err != nil {
			t.Fatal(err)
		}
	}
	c.AwaitNext()
	c.SetReadDeadline(time.Now().Add(guard))
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the last request: %d, %v, want io.EOF", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHeldReadSeesEndWithLastBytes: the client's last request and its end
// of the connection (FIN) arrive together, before the read that waits for
// them. One readiness covers both, and the read that returns the request
// reports no end; the kernel's count of what is left does (TCP_INQ), so
// the read after the answer tries the socket and finds the end. Without
// it, the connection would wait for a readiness that never comes.
func TestHeldReadSeesEndWithLastBytes(t *testing.T) {
	c, peer := heldPair(t)
	peer.Write([]byte("last"))
	peer.(*net.TCPConn).CloseWrite()
	until(t, c, finReceived)
	c.AwaitNext()
	c.SetReadDeadline(time.Now().Add(guard))
	buf := make([]byte, 64) // more than the request: the read leaves nothing
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "last" {
		t.Fatalf("last request: %q, %v", buf[:n], err)
	}
	c.AwaitNext()
	c.SetReadDeadline(time.Now().Add(guard))
	if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("after the last request: %d, %v, want io.EOF at once", n, err)
	}
}

// TestHeldReadSeesBytesSentEarly: bytes that arrive while nobody reads (a
// pipelining client) wake the next read, which waits without trying.
func TestHeldReadSeesBytesSentEarly(t *testing.T) {
	c, peer := heldPair(t)
	peer.Write([]byte("early"))
	until(t, c, func(fd int) bool { return queued(fd) == 5 })
	c.AwaitNext()
	if got := readString(t, c, 5); got != "early" {
		t.Fatalf("got %q", got)
	}
}

// TestHeldReadDeadline: a read past its deadline fails, as Go's own does,
// even with bytes waiting and no wait needed.
func TestHeldReadDeadline(t *testing.T) {
	c, peer := heldPair(t)
	peer.Write([]byte("waiting"))
	until(t, c, func(fd int) bool { return queued(fd) == 7 })
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err := c.Read(make([]byte, 7))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	if got := readString(t, c, 7); got != "waiting" {
		t.Fatalf("after the deadline was lifted: %q", got)
	}
}

// TestHeldReadClose: closing the connection, with a read waiting on the
// held read or not, ends the read, returns, and closes the socket (the
// peer sees its end).
func TestHeldReadClose(t *testing.T) {
	t.Run("read waiting", func(t *testing.T) {
		c, peer := heldPair(t)
		errc := make(chan error, 1)
		go func() {
			c.AwaitNext()
			_, err := c.Read(make([]byte, 8))
			errc <- err
		}()
		// The read is waiting once the held read waits in the poller.
		for !waitingOnHeld(c) {
			time.Sleep(time.Millisecond)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read during Close: %v, want net.ErrClosed", err)
		}
		expectEnd(t, peer)
	})
	t.Run("between reads", func(t *testing.T) {
		c, peer := heldPair(t)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		expectEnd(t, peer)
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read after Close: %v, want net.ErrClosed", err)
		}
	})
}

// TestHeldReadUnwrap: after Unwrap the connection underneath reads
// directly (the held read no longer holds it).
func TestHeldReadUnwrap(t *testing.T) {
	c, peer := heldPair(t)
	u := c.Unwrap()
	peer.Write([]byte("direct"))
	if got := readString(t, u, 6); got != "direct" {
		t.Fatalf("got %q", got)
	}
}

func waitingOnHeld(c *Conn) bool {
	h := c.h.Load()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

func expectEnd(t *testing.T, peer net.Conn) {
	t.Helper()
	peer.SetReadDeadline(time.Now().Add(guard))
	if n, err := peer.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("the peer read %d, %v, want io.EOF", n, err)
	}
}

// TestHeldReadSeesResetWithLastBytes: a reset that arrives with the last
// bytes is not in TCP_INQ's count, and no write has failed on it since:
// the read after them tries the socket, and reports the reset.
func TestHeldReadSeesResetWithLastBytes(t *testing.T) {
	c, peer := heldPair(t)
	peer.Write([]byte("last"))
	until(t, c, func(fd int) bool { return queued(fd) == 4 })
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close() // a reset
	until(t, c, func(fd int) bool { return tcpState(fd) == tcpClose })
	c.AwaitNext()
	c.SetReadDeadline(time.Now().Add(guard))
	buf := make([]byte, 64)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "last" {
		// Some kernels drop what was unread with the reset: then the
		// reset is what this read reports.
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("last bytes: %q, %v", buf[:n], err)
		}
		return
	}
	c.AwaitNext()
	if _, err := c.Read(buf); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after the last bytes: %v, want the reset (ECONNRESET) at once", err)
	}
}

// TestHeldReadCloseBeforeItBegins: a Close that begins before the held
// read is made (Shutdown closing an idle connection as its next request
// begins) still ends it: it never begins, and the close completes.
func TestHeldReadCloseBeforeItBegins(t *testing.T) {
	nc, peer := pair(t)
	c := nc.(*Conn)
	peer.Write([]byte("req"))
	c.closed.Store(true) // Close, up to its look for a held read
	c.closeHeld()
	c.AwaitNext()
	if c.h.Load() == nil {
		t.Skip("no TCP_INQ on this kernel")
	}
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read: %v, want net.ErrClosed", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Conn.Close() }() // the rest of Close
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(guard):
		t.Fatal("Close waits for a held read that should never have begun")
	}
	// The request was never read, so the close is a reset.
	peer.SetReadDeadline(time.Now().Add(guard))
	if _, err := peer.Read(make([]byte, 8)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the peer read %v, want the connection's end", err)
	}
}

// TestHeldReadUnwrapWhileReading: Unwrap while a Read waits leaves that
// Read to end the held read (the coroutine is resumed by one goroutine at
// a time); the Read completes from the connection underneath, which is
// then read directly.
func TestHeldReadUnwrapWhileReading(t *testing.T) {
	c, peer := heldPair(t)
	got := make(chan string, 1)
	go func() {
		c.AwaitNext()
		buf := make([]byte, 8)
		n, err := c.Read(buf)
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	for !waitingOnHeld(c) {
		time.Sleep(time.Millisecond)
	}
	u := c.Unwrap()
	peer.Write([]byte("x"))
	if s := <-got; s != "x" {
		t.Fatalf("the waiting read: %q, want %q", s, "x")
	}
	peer.Write([]byte("y"))
	if s := readString(t, u, 1); s != "y" {
		t.Fatalf("read underneath: %q", s)
	}
}

// TestHeldReadCloseAfterUnwrap: a Read after Unwrap waits in Go's poller
// as before the held read, and a Close ends it.
func TestHeldReadCloseAfterUnwrap(t *testing.T) {
	c, _ := heldPair(t)
	c.Unwrap()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		errc <- err
	}()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(guard):
		t.Fatal("Close waits behind a Read")
	}
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the read: %v, want net.ErrClosed", err)
	}
}

// tcpState is socket fd's TCP state (TCP_INFO).
func tcpState(fd int) uint8 {
	var ti syscall.TCPInfo
	size := uint32(syscall.SizeofTCPInfo)
	syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&ti)), uintptr(unsafe.Pointer(&size)), 0)
	return ti.State
}

const tcpClose = 7
