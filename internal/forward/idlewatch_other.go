//go:build !linux

package forward

import (
	"slices"
	"time"
)

// Where there is no epoll, the idle connections are looked at every
// idleScan: one system call per idle connection then, none per request.

// idleScan is how often idle connections are looked at for bytes their
// upstream sent unasked (or for their end).
const idleScan = 100 * time.Millisecond

// idleConn is a connection's part of it: the scan's own peeker, made at
// its first scan (a request may take the connection while the scan
// looks).
type idleConn struct {
	watchPeek *peeker
}

// idleWatch runs scanIdle every idleScan while a connection is idle.
type idleWatch struct {
	timer *time.Timer
	armed bool
}

// watchIdle arms the scan; the pool's lock is held.
func (p *pool) watchIdle(*conn) {
	if w := &p.watch; !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(idleScan, p.scanIdle)
		} else {
			w.timer.Reset(idleScan)
		}
	}
}

func (p *pool) unwatch(*conn) {}

func (p *pool) stopWatch() {}

// scanIdle looks at every idle connection, outside the pool's lock, and
// drops those whose upstream sent bytes unasked or closed them.
func (p *pool) scanIdle() {
	p.mu.Lock()
	idle := slices.Clone(p.idle)
	p.mu.Unlock()
	for _, c := range idle {
		if c.watchPeek == nil {
			if c.watchPeek = newPeeker(c.nc); c.watchPeek == nil {
				continue
			}
		}
		if ok, unsolicited := c.watchPeek.alive(); !ok {
			p.dropIdle(c, unsolicited)
		}
	}
	p.mu.Lock()
	if len(p.idle) > 0 {
		p.watch.timer.Reset(idleScan)
	} else {
		p.watch.armed = false
	}
	p.mu.Unlock()
}
