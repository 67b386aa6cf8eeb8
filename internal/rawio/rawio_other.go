//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package rawio

import "net"

// Wrap returns nc: raw system calls are used on Unix systems only.
func Wrap(nc net.Conn) net.Conn { return nc }

// Listener returns ln.
func Listener(ln net.Listener) net.Listener { return ln }
