package rawio

import (
	"syscall"
	"unsafe"
)

// EpollCtl is syscall.EpollCtl, a raw system call (it never waits).
func EpollCtl(epfd uintptr, op, fd int, ev *syscall.EpollEvent) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_CTL, epfd, uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
