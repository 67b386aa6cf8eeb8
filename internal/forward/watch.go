package forward

import (
	"context"
	"sync"
	"time"
)

// A watchdog ends the waits of exchanges whose context is done, or whose
// response head is late, by setting a past deadline on their connections.
// It is one timer per Forwarder, ticking only while exchanges are in
// flight, in place of a context.AfterFunc and a read deadline per request
// (together about a microsecond and five allocations a request); the cost
// is that such an end comes up to a tick late.
type watchdog struct {
	mu      sync.Mutex
	conns   []*conn // the connections of the exchanges in flight
	tick    time.Duration
	timer   *time.Timer // runs scan; armed while conns is not empty
	running bool
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
// A request's context ends when its client is gone, and floodgate's own
// server looks for that only once a handler has run 50ms
// (h1server.DisconnectCheck): a shorter period would find nothing sooner
// there. And at a moderate rate, an exchange is in flight within nearly
// every period, so each period costs the gateway a wake-up of its own
// between requests: at 1 000 requests/s a 10ms period was a fifth of its
// timer wake-ups (docs/benchmarks.md).
func watchTick(headerTimeout time.Duration) time.Duration {
	return min(50*time.Millisecond, max(headerTimeout/4, 100*time.Microsecond))
}

// add watches c, whose exchange serves a request with ctx.
func (wd *watchdog) add(ctx context.Context, c *conn) {
	c.ctx = ctx
	c.poisoned = poisonedNot
	c.headDeadline.Store(0)
	wd.mu.Lock()
	c.slot = len(wd.conns)
	wd.conns = append(wd.conns, c)
	if !wd.running {
		wd.running = true
		if wd.timer == nil {
			wd.timer = time.AfterFunc(wd.tick, wd.scan)
		} else {
			wd.timer.Reset(wd.tick)
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
	wd.timer.Reset(wd.tick)
}
