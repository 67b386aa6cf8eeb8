package forward

import (
	"bufio"
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/rawio"
)

// Buffer sizes of a connection.
const (
	readBufferSize  = 8 << 10
	writeBufferSize = 4 << 10
)

// aLongTimeAgo is a deadline in the past: setting it makes blocked reads
// and writes on a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

// A conn is one connection to the upstream with its buffers and the
// parsing state reused by every response read from it. It is used by one
// request at a time.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	reused bool  // it has served a request before
	idleAt int64 // when it was last pooled (monoNow)
	// owner is the client connection whose request it last carried
	// (ClientConn), with Options.Reuse ReusePerClient; nil otherwise.
	owner any
	head  head
	// lastBlock is the string of the last response head's names and
	// values (see copyHeader).
	lastBlock string
	lines     []byte // the last response head's field lines (writeHeaderLines)

	// The watchdog's state, while an exchange is in flight on it.
	ctx context.Context // the request's: watched, not used
	// ctxDeadline is ctx's deadline in monoNow's nanoseconds, 0 if none.
	ctxDeadline int64
	slot        int   // index in watchdog.conns
	poisoned    uint8 // why the watchdog set a past deadline; guarded by its mutex
	// headDeadline is when the response head is due, in monoNow's
	// nanoseconds: 0 when not awaited, -1 until the request body's
	// goroutine has written the body.
	headDeadline atomic.Int64

	peek     *peeker // nil where the platform cannot peek: never reused
	idleConn         // how the pool watches it while idle (idlewatch_*.go)
}

func newConn(nc net.Conn) *conn {
	// Reads and writes as raw system calls (rawio): nc itself keeps the
	// deadlines, the peeks and the close.
	rw := rawio.Wrap(nc)
	return &conn{
		nc:   nc,
		br:   bufio.NewReaderSize(rw, readBufferSize),
		bw:   bufio.NewWriterSize(rw, writeBufferSize),
		peek: newPeeker(nc),
	}
}

func (c *conn) setPastDeadline() { c.nc.SetDeadline(aLongTimeAgo) }

// pool holds idle connections, newest last: get takes the newest (its
// socket buffers and the upstream's state are warmest), the sweeper
// closes the oldest once they have been idle for the timeout.
type pool struct {
	mu      sync.Mutex
	idle    []*conn
	max     int
	timeout time.Duration
	// unsolicited is called when a connection is found to hold bytes
	// nobody asked for (it is then closed); nil: nothing is called.
	unsolicited func()
	timer       *time.Timer // runs sweep; armed while idle is not empty
	armed       bool
	// watch finds the idle connections whose upstream sent bytes unasked
	// or closed them (idlewatch_*.go): they are closed then, not only when
	// a request would take them.
	watch idleWatch
}

func (p *pool) init(max int, timeout time.Duration) {
	p.max, p.timeout = max, timeout
}

// get returns an idle connection, or nil; now is the time. With check, a connection is
// first checked for having been closed by the upstream (for requests that
// cannot be retried on a new connection).
func (p *pool) get(now int64, check bool) *conn {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.unwatch(c)
		if time.Duration(now-c.idleAt) >= p.timeout {
			// It and every older one have expired.
			stale := slices.Clone(p.idle)
			clear(p.idle)
			p.idle = p.idle[:0]
			p.mu.Unlock()
			c.nc.Close()
			for _, s := range stale {
				s.nc.Close()
			}
			return nil
		}
		p.mu.Unlock()
		if check && !p.alive(c) {
			c.nc.Close()
			continue
		}
		return c
	}
}

// getFor returns the newest idle connection whose last request was
// owner's, or nil (ReusePerClient); now is the time. It is checked as get
// checks with check.
func (p *pool) getFor(now int64, owner any) *conn {
	p.mu.Lock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		c := p.idle[i]
		if c.owner != owner {
			continue
		}
		n := copy(p.idle[i:], p.idle[i+1:])
		p.idle[i+n] = nil
		p.idle = p.idle[:i+n]
		p.unwatch(c)
		p.mu.Unlock()
		if time.Duration(now-c.idleAt) >= p.timeout || !p.alive(c) {
			c.nc.Close()
			return nil
		}
		return c
	}
	p.mu.Unlock()
	return nil
}

// alive reports whether the upstream has not closed c nor sent anything
// unasked on it: only then may c carry another request. Where the
// platform cannot peek, it is never reused. Bytes sent unasked are
// reported (unsolicited).
func (p *pool) alive(c *conn) bool {
	if c.peek == nil {
		return false
	}
	ok, unsolicited := c.peek.alive()
	if unsolicited && p.unsolicited != nil {
		p.unsolicited()
	}
	return ok
}

// put pools c, which has no request in progress, or closes it when the
// pool is full.
func (p *pool) put(c *conn) {
	c.reused = true
	c.idleAt = monoNow()
	p.mu.Lock()
	if len(p.idle) >= p.max {
		p.mu.Unlock()
		c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
	p.watchIdle(c)
	if !p.armed {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(p.timeout, p.sweep)
		} else {
			p.timer.Reset(p.timeout)
		}
	}
	p.mu.Unlock()
}

// sweep closes the connections idle for the timeout and arms the timer
// for the next to expire.
func (p *pool) sweep() {
	now := monoNow()
	p.mu.Lock()
	i := 0
	for i < len(p.idle) && time.Duration(now-p.idle[i].idleAt) >= p.timeout {
		i++
	}
	stale := slices.Clone(p.idle[:i])
	n := copy(p.idle, p.idle[i:])
	clear(p.idle[n:])
	p.idle = p.idle[:n]
	if n > 0 {
		p.timer.Reset(time.Duration(p.idle[0].idleAt-now) + p.timeout)
	} else {
		p.armed = false
		p.stopWatch() // nothing has been pooled for the timeout
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.nc.Close()
	}
}

// take removes c from the idle connections and reports whether it was
// one of them.
func (p *pool) take(c *conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.idle, c)
	if i < 0 {
		return false
	}
	n := copy(p.idle[i:], p.idle[i+1:])
	p.idle[i+n] = nil
	p.idle = p.idle[:i+n]
	p.unwatch(c)
	return true
}

// closeIdle closes every idle connection.
func (p *pool) closeIdle() {
	p.mu.Lock()
	stale := slices.Clone(p.idle)
	clear(p.idle)
	p.idle = p.idle[:0]
	p.stopWatch()
	p.mu.Unlock()
	for _, c := range stale {
		c.nc.Close()
	}
}

// dropIdle closes c, found holding bytes nobody asked for (unsolicited)
// or closed by its upstream while idle, if it is still idle.
func (p *pool) dropIdle(c *conn, unsolicited bool) {
	if !p.take(c) {
		return // taken by a request meanwhile, which checks it
	}
	if unsolicited && p.unsolicited != nil {
		p.unsolicited()
	}
	c.nc.Close()
}

// idleCount returns the number of idle connections.
func (p *pool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

var clockStart = time.Now()

// monoNow reads the monotonic clock, in nanoseconds since the package
// started: for idle times and the response-head deadlines, which are
// durations, never dates. One clock read where time.Now makes two (wall
// and monotonic), and no step of the wall clock moves a deadline.
func monoNow() int64 { return int64(time.Since(clockStart)) }
