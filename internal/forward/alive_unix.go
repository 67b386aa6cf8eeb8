//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package forward

import (
	"net"
	"syscall"
)

// alive peeks at nc without blocking: an idle connection to an upstream
// has nothing to read, so end of file or data mean it cannot be used.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		for err == syscall.EINTR {
			_, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		}
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true // never wait: returning false would block until readable
	})
	return err == nil && ok
}
