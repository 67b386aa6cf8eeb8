// Package listen wraps the listeners floodgate serves HTTP on, for what
// both server engines (internal/h1server and net/http's) must do to their
// connections alike.
package listen

import (
	"net"
	"sync/atomic"
	"time"
)

// WriteIdle returns a listener whose connections give each write d to
// complete: a client that reads nothing for d has its connection's writes
// fail (the server then closes it), like nginx's send_timeout. It bounds
// the wait between two writes, not a whole answer, so a slow download
// that keeps reading is never cut off. d <= 0 returns ln itself.
//
// The deadline is set again only when the one set is more than d/32 old:
// a write may fail up to d/32 sooner than d after it started, and a busy
// connection does not pay for a timer change on every write. A deadline
// the server sets itself (SetWriteDeadline, SetDeadline) wins until it
// clears it.
func WriteIdle(ln net.Listener, d time.Duration) net.Listener {
	if d <= 0 {
		return ln
	}
	return &writeIdleListener{Listener: ln, d: d}
}

type writeIdleListener struct {
	net.Listener
	d time.Duration
}

func (l *writeIdleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &writeIdleConn{Conn: c, d: l.d}, nil
}

// writeIdleConn is a connection whose writes have a deadline. It is safe
// for concurrent use, as net.Conn is.
type writeIdleConn struct {
	net.Conn
	d   time.Duration
	set atomic.Int64 // when the deadline was last set (monoNow); 0: never
	own atomic.Bool  // the server's own write deadline is set
}

var clockStart = time.Now()

// monoNow reads the monotonic clock, in nanoseconds since the package
// started (never 0 once a moment has passed).
func monoNow() int64 { return int64(time.Since(clockStart)) + 1 }

func (c *writeIdleConn) Write(p []byte) (int, error) {
	if !c.own.Load() {
		now := monoNow()
		if last := c.set.Load(); last == 0 || now-last > int64(c.d/32) {
			c.set.Store(now)
			c.Conn.SetWriteDeadline(time.Now().Add(c.d))
		}
	}
	return c.Conn.Write(p)
}

func (c *writeIdleConn) SetWriteDeadline(t time.Time) error {
	c.own.Store(!t.IsZero())
	c.set.Store(0)
	return c.Conn.SetWriteDeadline(t)
}

func (c *writeIdleConn) SetDeadline(t time.Time) error {
	c.own.Store(!t.IsZero())
	c.set.Store(0)
	return c.Conn.SetDeadline(t)
}

// CloseWrite closes the writing side, when the connection has one (TCP,
// Unix; else it does nothing): the servers do, before lingering over a
// connection they close.
func (c *writeIdleConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Unwrap returns the connection underneath.
func (c *writeIdleConn) Unwrap() net.Conn { return c.Conn }

// A Limiter caps the connections open at once across the listeners it
// wraps: a connection accepted beyond the cap is closed at once, before
// the server sees it, so that the process degrades (refusing some
// clients) before it runs out of file descriptors (refusing everything,
// its own metrics and upstream connections included). It is safe for
// concurrent use.
type Limiter struct {
	max      int64
	open     atomic.Int64
	rejected func() // called for each connection closed at once; may be nil
}

// NewLimiter returns a Limiter of max connections (max <= 0: no cap);
// rejected, if not nil, is called for each connection it closes at once.
func NewLimiter(max int, rejected func()) *Limiter {
	return &Limiter{max: int64(max), rejected: rejected}
}

// Open returns the number of connections open now.
func (l *Limiter) Open() int64 { return l.open.Load() }

// Wrap returns ln with its connections counted against l (counted with
// no cap too: Open is read for more than the cap).
func (l *Limiter) Wrap(ln net.Listener) net.Listener {
	if l == nil {
		return ln
	}
	return &limitListener{Listener: ln, l: l}
}

type limitListener struct {
	net.Listener
	l *Limiter
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := ll.l.open.Add(1); ll.l.max > 0 && n > ll.l.max {
			ll.l.open.Add(-1)
			// Counted before the close, so that whoever sees the
			// connection end sees it counted.
			if ll.l.rejected != nil {
				ll.l.rejected()
			}
			c.Close()
			continue
		}
		return &limitConn{Conn: c, l: ll.l}, nil
	}
}

// limitConn gives its place back once, when it is first closed.
type limitConn struct {
	net.Conn
	l      *Limiter
	closed atomic.Bool
}

func (c *limitConn) Close() error {
	if !c.closed.Swap(true) {
		c.l.open.Add(-1)
	}
	return c.Conn.Close()
}

func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Unwrap returns the connection underneath.
func (c *limitConn) Unwrap() net.Conn { return c.Conn }
