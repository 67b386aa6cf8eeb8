package rawio

import (
	"errors"
	"io"
	"iter"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// A held read keeps one read of the socket in progress in Go's poller for
// the connection's life, so that a server waiting for a keep-alive
// client's next request need not begin with a read that finds nothing.
//
// Go's poller forgets, as each read begins, that the socket has become
// readable: a read must then try the socket before it may wait, or a
// readiness seen before it began would be lost. A server pays one such
// read a request, and it finds nothing: the client sends its next request
// once it has the answer. nginx does not; it waits on epoll once a read
// has left the socket empty, and the socket's next bytes wake it.
//
// A held read does the same. One syscall.RawConn.Read stays in progress on
// a coroutine (iter.Pull: switching to it and back is no system call), so
// the poller keeps every readiness it sees from then on; the connection
// reads with raw recvmsg calls, each of which also says what is left to
// read (TCP_INQ: bytes, or the client's end of the connection, which a
// read that returned data has not reported). When the server says the
// next read is the first of a new request (AwaitNext), the last read
// left nothing at all and the connection has written since (its answer),
// the read waits on the held read at once. Any other read tries the socket
// first, as before. A reset is the one thing TCP_INQ does not report: one
// that came with the last bytes fails the write after them, so a read
// waits without trying only after a write that succeeded.
//
// Measured on the gateway (GOMAXPROCS=1, MaveDB's rules, wrk -c32, six
// alternating rounds against the build without it, medians): one read a
// request fewer, +6 % throughput, -6 % CPU a request (docs/benchmarks.md,
// "The read before the next request").
type held struct {
	mu      sync.Mutex
	next    func() (error, bool)
	stop    func()
	fd      uintptr // the socket, while the held read is in progress
	live    bool    // the held read is in progress and nothing was forgotten since it began
	empty   bool    // the last read left nothing to read, not even an end
	emptyW  uint64  // the connection's writes when it did (Conn.writes)
	hinted  bool    // the next read begins a new request (AwaitNext)
	waiting bool    // a Read waits on the held read
	closing bool
	ended   bool
	unwrap  bool // Unwrap came while a Read waited: that Read ends the held read

	msg  syscall.Msghdr
	iov  syscall.Iovec
	cmsg [4]uint64 // room for one control message with an int (TCP_CM_INQ), aligned
}

// tcpInq is TCP_INQ, and TCP_CM_INQ, the control message it adds to each
// read: the bytes left to read, or 1 after the peer's FIN (tcp(7), Linux
// 4.18 and later; the same value on every architecture).
const tcpInq = 36

// AwaitNext tells the connection that its next Read begins a new request
// after an answer: if the last read left nothing to read, the Read waits
// for the socket's next bytes without trying it first. A server calls it
// before it waits for a keep-alive client's next request. The first call
// turns the held read on (TCP connections on Linux only; on others it
// does nothing).
func (c *Conn) AwaitNext() {
	h := c.h.Load()
	if h == nil {
		if c.noHold || !c.startHolding() {
			return
		}
		h = c.h.Load()
	}
	h.mu.Lock()
	h.hinted = true
	h.mu.Unlock()
}

// startHolding asks the kernel for what is left after each read
// (TCP_INQ), and makes the connection's held read.
func (c *Conn) startHolding() bool {
	if _, ok := c.Conn.(*net.TCPConn); !ok {
		c.noHold = true
		return false
	}
	var serr error
	err := c.rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpInq, 1)
	})
	if err != nil || serr != nil {
		c.noHold = true // an older kernel: reads stay as they were
		return false
	}
	h := new(held)
	h.msg.Iov = &h.iov
	h.msg.Iovlen = 1
	c.h.Store(h)
	if c.closed.Load() {
		// Close came before the held read was stored, so it did not
		// end it: it never begins.
		h.mu.Lock()
		h.closing, h.ended = true, true
		h.mu.Unlock()
	}
	return true
}

// heldRead is the held read's coroutine. Each value it yields lets the
// reader read the socket (nil) or says why it may not (the read's error:
// a deadline, the connection closed).
func (c *Conn) heldRead(yield func(error) bool) {
	h := c.h.Load()
	stopped := false
	f := func(fd uintptr) bool {
		h.fd = fd
		if !yield(nil) {
			stopped = true
			return true
		}
		return false // wait until readable
	}
	for !stopped {
		if err := c.rc.Read(f); err != nil && !stopped {
			if !yield(err) {
				return
			}
		}
	}
}

// readHeld is Read once the held read is on.
func (c *Conn) readHeld(h *held, p []byte) (int, error) {
	h.mu.Lock()
	if h.ended && !h.closing {
		h.mu.Unlock()
		return c.readRaw(p) // after Unwrap
	}
	n, err := c.readHeldLocked(h, p)
	h.mu.Unlock()
	if err == errEnded {
		return c.readRaw(p)
	}
	return n, err
}

// errEnded: Unwrap ended the held read while this Read waited on it.
var errEnded = errors.New("rawio: the held read has ended")

func (c *Conn) readHeldLocked(h *held, p []byte) (int, error) {
	wait := h.hinted && h.live && h.empty && c.writes.Load() != h.emptyW
	h.hinted = false
	for {
		if h.closing {
			return 0, c.opError("read", net.ErrClosed)
		}
		if wait || !h.live {
			if err := h.await(c); err == errEnded {
				return 0, err
			} else if err != nil {
				return 0, c.opError("read", unwrapRaw(err))
			}
		} else if c.pastReadDeadline() {
			// Go's poller fails a read past the deadline: so does
			// one that does not wait.
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
		wait = false
		n, inq, e := h.recv(p)
		switch e {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			h.empty, h.emptyW = inq == 0, c.writes.Load()
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			h.empty, h.emptyW, wait = true, c.writes.Load(), true
			continue
		}
		return 0, c.opError("read", os.NewSyscallError("read", e))
	}
}

// await waits on the held read until the socket may be read: resumes the
// coroutine, which waits in the poller if it was waiting already, or
// begins a new read of the socket (after a deadline's error, or at first)
// and yields at once. h.mu is held, and released while waiting.
func (h *held) await(c *Conn) error {
	if h.next == nil {
		h.next, h.stop = iter.Pull(c.heldRead)
	}
	h.waiting = true
	h.mu.Unlock()
	err, _ := h.next()
	h.mu.Lock()
	h.waiting = false
	if h.closing {
		h.end()
		return net.ErrClosed
	}
	if h.unwrap {
		h.end()
		return errEnded
	}
	if err != nil {
		h.live = false
		if errors.Is(err, net.ErrClosed) {
			h.end() // closed before the held read began
		}
		return err
	}
	h.live = true
	return nil
}

// recv reads into p with recvmsg, and returns what is left to read (-1:
// not said).
func (h *held) recv(p []byte) (n, inq int, e syscall.Errno) {
	h.iov.Base = &p[0]
	h.iov.SetLen(len(p))
	h.msg.Control = (*byte)(unsafe.Pointer(&h.cmsg[0]))
	h.msg.SetControllen(len(h.cmsg) * 8)
	r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, h.fd, uintptr(unsafe.Pointer(&h.msg)), syscall.MSG_DONTWAIT)
	h.iov.Base = nil // the caller's buffer is not kept
	inq = -1
	if e == 0 && int(h.msg.Controllen) >= syscall.CmsgLen(4) {
		hdr := (*syscall.Cmsghdr)(unsafe.Pointer(&h.cmsg[0]))
		if hdr.Level == syscall.IPPROTO_TCP && hdr.Type == tcpInq {
			inq = int(*(*int32)(unsafe.Pointer(uintptr(unsafe.Pointer(&h.cmsg[0])) + uintptr(syscall.CmsgLen(0)))))
		}
	}
	return int(r), inq, e
}

// end stops the coroutine: its read returns, and the socket is released.
// h.mu is held, and no Read waits.
func (h *held) end() {
	if h.next != nil && !h.ended {
		h.stop()
	}
	h.ended = true
}

// closeHeld ends the held read as the connection closes: at once if no
// Read waits on it, else the waiting Read ends it once the close has
// woken it.
func (c *Conn) closeHeld() {
	if h := c.h.Load(); h != nil {
		h.mu.Lock()
		h.closing = true
		if !h.waiting {
			h.end()
		}
		h.mu.Unlock()
	}
}

// endHeld ends the held read for good (Unwrap): the connection underneath
// may then be read directly. A Read waiting on it ends it as it returns
// (the coroutine is resumed by one goroutine at a time).
func (c *Conn) endHeld() {
	if h := c.h.Load(); h != nil {
		h.mu.Lock()
		if h.waiting {
			h.unwrap = true
		} else {
			h.end()
		}
		h.mu.Unlock()
	}
}
