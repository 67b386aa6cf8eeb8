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
	var ti syscall.TCPInfo
	size := uint32(syscall.SizeofTCPInfo)
	_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, uintptr(fd), syscall.IPPROTO_TCP, syscall.TCP_INFO,
		uintptr(unsafe.Pointer(&ti)), uintptr(unsafe.Pointer(&size)), 0)
	const tcpCloseWait = 8
	return e == 0 && ti.State == tcpCloseWait
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
