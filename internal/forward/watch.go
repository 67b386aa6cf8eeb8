package forward

import (
	"context"
	"sync"
	"time"
)

// A watchdog ends the waits of exchanges whose context is done, or whose
// response head is late, by setting a past deadline on their connections.
// It is one timer per Forwarder, set while exchanges are in flight, in
// place of a context.AfterFunc and a read deadline per request (together
// about a microsecond and five allocations a request). The timer fires at
// the earliest context deadline or response-head deadline among them, or
// a tick after it last looked, whichever comes first: deadlines end on
// time, and a context canceled otherwise (a client gone) ends a wait up
// to a tick late.
type watchdog struct {
	mu      sync.Mutex
	conns   []*conn // the connections of the exchanges in flight
	tick    time.Duration
	timer   *time.Timer // runs scan; armed while conns is not empty
	running bool
	at      int64 // when the timer fires (monoNow), while running
}

// Why a watchdog poisoned a connection.
const (
	poisonedNot = iota
	poisonedContext
	poisonedTimeout
)

// watchTick returns the watchdog's period for a response-header timeout:
// 50ms, or less for a shorter timeout, so that no wait overruns it by
// more than a quarter.
//
// The period bounds how late a context canceled by anything but its
// deadline ends a wait: a client gone (floodgate's own server looks for
// that only once a handler has run 50ms, h1server.DisconnectCheck), the
// server shutting down. And at a moderate rate an exchange is in flight
// within nearly every period, so each period costs the gateway a wake-up
// of its own between requests: at 1 000 requests/s a 10ms period was a
// fifth of its timer wake-ups (docs/benchmarks.md).
func watchTick(headerTimeout time.Duration) time.Duration {
	return min(50*time.Millisecond, max(headerTimeout/4, 100*time.Microsecond))
}

// watchStep is the least time between two looks: a context whose
// deadline has passed is canceled by its own timer, which may run just
// after the watchdog's.
const watchStep = 250 * time.Microsecond

// add watches c, whose exchange serves a request with ctx; now is
// monoNow's reading.
func (wd *watchdog) add(ctx context.Context, c *conn, now int64) {
	c.ctx = ctx
	c.poisoned = poisonedNot
	c.headDeadline.Store(0)
	c.ctxDeadline = 0
	due := now + int64(wd.tick)
	if d, ok := ctx.Deadline(); ok {
		c.ctxDeadline = now + int64(time.Until(d))
		due = min(due, max(c.ctxDeadline, now+int64(watchStep)))
	}
	wd.mu.Lock()
	c.slot = len(wd.conns)
	wd.conns = append(wd.conns, c)
	if !wd.running || due < wd.at {
		wd.running, wd.at = true, due
		if wd.timer == nil {
			wd.timer = time.AfterFunc(time.Duration(due-now), wd.scan)
		} else {
			wd.timer.Reset(time.Duration(due - now))
		}
	}
	wd.mu.Unlock()
}

// remove stops watching c and reports whether it was poisoned (and so
// cannot be reused).
func (wd *watchdog) remove(c *conn) (poisoned bool) {
	wd.mu.Lock()
	last := len(wd.conns) - 1
	m := wd.conns[last]
	wd.conns[c.slot], m.slot = m, c.slot
	wd.conns[last] = nil
	wd.conns = wd.conns[:last]
	poisoned = c.poisoned != poisonedNot
	wd.mu.Unlock()
	c.ctx = nil
	return poisoned
}

// scan poisons the connections whose exchange's context is done or whose
// response-header deadline has passed.
func (wd *watchdog) scan() {
	now := monoNow()
	wd.mu.Lock()
	defer wd.mu.Unlock()
	for _, c := range wd.conns {
		if c.poisoned != poisonedNot {
			continue
		}
		if c.ctx.Err() != nil {
			c.poisoned = poisonedContext
			c.setPastDeadline()
		} else if d := c.headDeadline.Load(); d > 0 && now >= d {
			c.poisoned = poisonedTimeout
			c.setPastDeadline()
		}
	}
	if len(wd.conns) == 0 {
		wd.running = false
		return
	}
	next := now + int64(wd.tick)
	for _, c := range wd.conns {
		if c.poisoned != poisonedNot {
			continue
		}
		if d := c.ctxDeadline; d > 0 && d < next {
			next = d
		}
		if d := c.headDeadline.Load(); d > 0 && d < next {
			next = d
		}
	}
	next = max(next, now+int64(watchStep))
	wd.at = next
	wd.timer.Reset(time.Duration(next - now))
}
