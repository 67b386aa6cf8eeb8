//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package forward

import (
	"net"
	"syscall"

	"github.com/floodgate/floodgate/internal/rawio"
)

// peeker looks at a connection without blocking or consuming: an idle
// connection to an upstream has nothing to read, so end of file or data
// mean it cannot carry another request. Its callback is made once, so a
// peek allocates nothing.
type peeker struct {
	rc   syscall.RawConn
	ok   bool
	data bool // bytes were waiting: an upstream's unsolicited answer
	b    [1]byte
	fn   func(fd uintptr) bool
}

func newPeeker(nc net.Conn) *peeker {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &peeker{rc: rc}
	p.fn = func(fd uintptr) bool {
		n, err := rawio.Peek(fd, p.b[:])
		p.ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		p.data = err == nil && n > 0
		return true // never wait: returning false would block until readable
	}
	return p
}

// alive reports whether nothing is waiting on the connection and it is
// open, and if not, whether bytes were waiting (rather than the end of
// the connection). Calls must not overlap (a connection is used by one
// request at a time).
func (p *peeker) alive() (ok, unsolicited bool) {
	p.ok, p.data = false, false
	err := p.rc.Read(p.fn)
	return err == nil && p.ok, err == nil && p.data
}
