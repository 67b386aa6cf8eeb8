//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Package rawio reads and writes non-blocking sockets with raw system
// calls, through the socket's syscall.RawConn: Go's poller still waits
// when the socket is not ready and still applies the connection's
// deadlines, but the read or write itself is not announced to the
// scheduler as a system call.
//
// Why: on a non-blocking socket a read or write never waits; it only
// takes a few microseconds of the kernel's time. Announced as a system
// call, it wakes Go's monitor thread (sysmon) whenever the process was
// idle before it (a futex call); the monitor then polls every 20 µs and
// hands the goroutine's P to another thread when a call lasts longer than
// that (a write on loopback runs the receiver's network stack), so the
// request resumes on another thread with cold caches. A gateway idle
// between requests paid that on nearly every request. Measured on the
// gateway at 1 000 requests/s (GOMAXPROCS=1, MaveDB's rules): thread
// switches 5.4 → 2.5 a request, CPU a request −29 %; under saturating
// load, CPU a request −20 % (docs/benchmarks.md).
package rawio

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// A Conn is a TCP or Unix connection whose Read and Write are raw system
// calls; the rest is the connection's own. Read and Write may be called
// at once (one of each), as on any net.Conn.
type Conn struct {
	net.Conn
	rc syscall.RawConn

	// The read in progress, for readFn.
	rp    []byte
	rn    int
	rerr  syscall.Errno
	readF func(fd uintptr) bool

	// The write in progress, for writeFn.
	wp     []byte
	wn     int
	werr   syscall.Errno
	writeF func(fd uintptr) bool

	// The held read (held_linux.go), once AwaitNext has turned it on.
	h      atomic.Pointer[held]
	noHold bool          // it cannot be turned on
	closed atomic.Bool   // Close has begun
	writes atomic.Uint64 // writes that succeeded, for the held read
	// The read deadline for reads that do not wait, as Go's poller keeps
	// it: on the monotonic clock, as the time since clockBase (0: none).
	rdl atomic.Int64
}

// clockBase is where Conn.rdl counts from.
var clockBase = time.Now()

// Wrap returns nc with raw reads and writes (a *Conn) when it is a TCP or
// Unix connection, and nc itself otherwise.
func Wrap(nc net.Conn) net.Conn {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return nc
	}
	rc, err := nc.(syscall.Conn).SyscallConn()
	if err != nil {
		return nc
	}
	c := &Conn{Conn: nc, rc: rc}
	c.readF = c.readFn
	c.writeF = c.writeFn
	return c
}

// Listener returns ln with its connections wrapped (Wrap).
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return Wrap(c), nil
}

// CloseWrite closes the writing side, as the connection's own does.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Unwrap returns the connection underneath, to be read directly: the held
// read, if on, ends.
func (c *Conn) Unwrap() net.Conn {
	c.endHeld()
	return c.Conn
}

// Close closes the connection (and ends the held read, if on).
func (c *Conn) Close() error {
	c.closed.Store(true)
	c.closeHeld()
	return c.Conn.Close()
}

// SetDeadline sets the connection's read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.noteReadDeadline(t)
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline sets the connection's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.noteReadDeadline(t)
	return c.Conn.SetReadDeadline(t)
}

func (c *Conn) noteReadDeadline(t time.Time) {
	var d int64
	if !t.IsZero() {
		if d = int64(t.Sub(clockBase)); d == 0 { // (Sub saturates)
			d = -1 // the same moment, for the reads: passed
		}
	}
	c.rdl.Store(d)
}

// pastReadDeadline reports whether the read deadline has passed.
func (c *Conn) pastReadDeadline() bool {
	d := c.rdl.Load()
	return d != 0 && int64(time.Since(clockBase)) >= d
}

func (c *Conn) readFn(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rp[0])), uintptr(len(c.rp)))
		switch e {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait until readable
		}
		c.rerr = e
		return true
	}
}

func (c *Conn) writeFn(fd uintptr) bool {
	for c.wn < len(c.wp) {
		p := c.wp[c.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case 0:
			c.wn += int(n)
			continue
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait until writable
		}
		c.werr = e
		return true
	}
	return true
}

// Read reads into p as the connection's Read does: io.EOF at the end, a
// *net.OpError otherwise (a deadline's error is a timeout).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if h := c.h.Load(); h != nil {
		return c.readHeld(h, p)
	}
	return c.readRaw(p)
}

// readRaw reads into p, trying the socket first, then waiting in Go's
// poller until it is readable.
func (c *Conn) readRaw(p []byte) (int, error) {
	c.rp, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.readF)
	n, e := c.rn, c.rerr
	c.rp = nil
	switch {
	case err != nil:
		return 0, c.opError("read", unwrapRaw(err))
	case e != 0:
		return 0, c.opError("read", os.NewSyscallError("read", e))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting for the socket as the connection's
// Write does.
func (c *Conn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.wp, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeF)
	n, e := c.wn, c.werr
	c.wp = nil
	switch {
	case err != nil:
		return n, c.opError("write", unwrapRaw(err))
	case e != 0:
		return n, c.opError("write", os.NewSyscallError("write", e))
	}
	c.writes.Add(1)
	return n, nil
}

// unwrapRaw takes the cause out of the raw-read or raw-write error of a
// RawConn (a deadline, a closed connection), to be wrapped as the
// connection's own Read and Write wrap it.
func unwrapRaw(err error) error {
	if op, ok := err.(*net.OpError); ok {
		return op.Err
	}
	return err
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// Peek reads what is waiting on socket fd into p without taking it or
// waiting (MSG_PEEK, MSG_DONTWAIT): syscall.EAGAIN when nothing is.
func Peek(fd uintptr, p []byte) (int, error) {
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		}
		return 0, e
	}
}
