package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pair returns the two ends of a loopback TCP connection, the first
// wrapped.
func pair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := Listener(ln).Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := <-accepted
	if c == nil {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, peer
}

func unixOnly(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("raw system calls are used on Unix systems only")
	}
}

func TestWrapTakesTCPOnly(t *testing.T) {
	unixOnly(t)
	c, _ := pair(t)
	if _, ok := c.(*Conn); !ok {
		t.Fatalf("Listener accepted a %T, want *Conn", c)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if w := Wrap(a); w != a {
		t.Errorf("Wrap(a pipe) = %T, want the pipe itself", w)
	}
}

// TestReadWrite sends more than the socket buffers hold both ways at
// once, so that writes wait for the peer and reads for data.
func TestReadWrite(t *testing.T) {
	unixOnly(t)
	c, peer := pair(t)
	const size = 8 << 20
	out := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	var wg sync.WaitGroup
	var got, echoed []byte
	var werr, perr error
	wg.Add(3)
	go func() { // c writes everything
		defer wg.Done()
		n, err := c.Write(out)
		if err == nil && n != len(out) {
			err = io.ErrShortWrite
		}
		werr = err
		c.(*Conn).CloseWrite()
	}()
	go func() { // the peer echoes what it reads
		defer wg.Done()
		echoed, perr = io.ReadAll(peer)
		if perr == nil {
			_, perr = peer.Write(echoed)
		}
		peer.(*net.TCPConn).CloseWrite()
	}()
	go func() { // c reads the echo, in small reads
		defer wg.Done()
		buf := make([]byte, 1000)
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	if werr != nil || perr != nil {
		t.Fatal(werr, perr)
	}
	if !bytes.Equal(got, out) {
		t.Errorf("read back %d bytes, want the %d written", len(got), len(out))
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
	if n, err := c.Write(nil); n != 0 || err != nil {
		t.Errorf("Write(nil) = %d, %v", n, err)
	}
}

// TestErrors: the errors are the connection's own kinds, for the code
// that classifies them (timeouts, closed connections, resets).
func TestErrors(t *testing.T) {
	unixOnly(t)
	t.Run("deadline", func(t *testing.T) {
		c, _ := pair(t)
		c.SetReadDeadline(time.Now().Add(-time.Second))
		_, err := c.Read(make([]byte, 10))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("read past the deadline: %v, want a timeout", err)
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "read" {
			t.Errorf("read past the deadline: %#v, want a read *net.OpError", err)
		}
		c.SetWriteDeadline(time.Now().Add(-time.Second))
		if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("write past the deadline: %v", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		c, _ := pair(t)
		c.Close()
		if _, err := c.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
			t.Errorf("read after Close: %v, want net.ErrClosed", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Errorf("write after Close: %v, want net.ErrClosed", err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		c, peer := pair(t)
		peer.(*net.TCPConn).SetLinger(0)
		peer.Close() // an RST
		var err error
		for range 100 { // the first write may still be taken
			if _, err = c.Write([]byte("x")); err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Errorf("write to a reset connection: %v, want ECONNRESET or EPIPE", err)
		}
	})
	t.Run("eof", func(t *testing.T) {
		c, peer := pair(t)
		peer.Close()
		if n, err := c.Read(make([]byte, 10)); n != 0 || err != io.EOF {
			t.Errorf("read after the peer closed: %d, %v, want io.EOF", n, err)
		}
	})
}

func TestPeek(t *testing.T) {
	unixOnly(t)
	c, peer := pair(t)
	rc, err := c.(*Conn).Unwrap().(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	peek := func() (n int, err error) {
		b := make([]byte, 4)
		rc.Control(func(fd uintptr) { n, err = Peek(fd, b) })
		return n, err
	}
	if n, err := peek(); err != syscall.EAGAIN {
		t.Errorf("peek with nothing waiting: %d, %v, want EAGAIN", n, err)
	}
	peer.Write([]byte("ab"))
	var n int
	for range 1000 { // until the bytes are there
		if n, err = peek(); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n != 2 || err != nil {
		t.Fatalf("peek with 2 bytes waiting: %d, %v", n, err)
	}
	buf := make([]byte, 10)
	if n, err := c.Read(buf); n != 2 || string(buf[:2]) != "ab" || err != nil {
		t.Errorf("read after the peek: %q, %v: the peek took the bytes", buf[:n], err)
	}
}

// BenchmarkRoundTrip is a 100-byte exchange over loopback, read and written
// through rawio or the connection itself: what the raw calls cost or save
// with the process busy (the case where Go's runtime makes nothing of a
// system call either).
func BenchmarkRoundTrip(b *testing.B) {
	for _, raw := range []bool{false, true} {
		name := "net"
		if raw {
			name = "rawio"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.Copy(c, c)
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if raw {
				c = Wrap(c)
			}
			msg := make([]byte, 100)
			buf := make([]byte, 100)
			b.ReportAllocs()
			for b.Loop() {
				c.Write(msg)
				io.ReadFull(c, buf)
			}
		})
	}
}
