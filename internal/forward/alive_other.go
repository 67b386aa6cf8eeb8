//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package forward

import "net"

// peeker cannot look at a connection on this platform: connections are
// then never reused (conn.alive), so no stale or unsolicited response can
// be taken for another request's.
type peeker struct{}

func newPeeker(net.Conn) *peeker { return nil }

func (*peeker) alive() (ok, unsolicited bool) { return false, false }
