//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package rawio

// held is Linux's (held_linux.go): elsewhere every read tries the socket
// first.
type held struct{}

// AwaitNext does nothing here: see held_linux.go.
func (c *Conn) AwaitNext() {}

func (c *Conn) readHeld(*held, []byte) (int, error) { panic("rawio: no held read here") }
func (c *Conn) closeHeld()                          {}
func (c *Conn) endHeld()                            {}
