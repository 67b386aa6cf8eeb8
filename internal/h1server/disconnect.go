package h1server

import (
	"sync"
	"time"
)

// disconnectWatch starts the background read of each connection whose
// handler has run DisconnectCheck with nothing left to read for it
// (connReader.arm): one timer for the server, set only while some handler
// is armed, for the earliest of them.
//
// Why one timer and not one a connection: a handler is armed on nearly
// every request and returns long before DisconnectCheck, so a timer of
// its own either woke the process once a connection every DisconnectCheck
// to find nothing to do (left running), or cost two timer updates a
// request (stopped and set again; Go's runtime still wakes for a stopped
// timer until it tidies its heap). A gateway between requests, at a
// moderate rate, paid those wake-ups on cold caches: at 1 000 requests/s
// over 16 connections they were half of its timer wake-ups
// (docs/benchmarks.md). Here a moderate rate costs at most one wake-up
// each DisconnectCheck, whatever the number of connections. The price is
// a lock the whole server shares, taken as each handler is armed and
// disarmed: a few tens of nanoseconds a request uncontended, more when
// many cores serve requests at once (the forwarder's watchdog makes the
// same trade).
type disconnectWatch struct {
	mu      sync.Mutex
	armed   []armedConn // the armed handlers not yet watched
	timer   *time.Timer // runs scan; set while armed is not empty
	running bool
}

// An armedConn is a connection whose handler was armed at at (monoNow),
// the arm-th time on that connection.
type armedConn struct {
	cr  *connReader
	at  int64
	arm uint64
}

// add watches cr, whose handler was armed at at; cr.mu is held.
func (w *disconnectWatch) add(cr *connReader, at int64) {
	w.mu.Lock()
	cr.watchSlot = len(w.armed)
	w.armed = append(w.armed, armedConn{cr, at, cr.arms})
	if !w.running {
		w.running = true
		if w.timer == nil {
			w.timer = time.AfterFunc(DisconnectCheck, w.scan)
		} else {
			w.timer.Reset(DisconnectCheck)
		}
	}
	w.mu.Unlock()
}

// remove stops watching cr, if it still is; cr.mu is held.
func (w *disconnectWatch) remove(cr *connReader) {
	w.mu.Lock()
	if i := cr.watchSlot; i >= 0 {
		w.removeAt(i)
	}
	w.mu.Unlock()
}

// removeAt takes the i-th armed handler out; w.mu is held.
func (w *disconnectWatch) removeAt(i int) {
	last := len(w.armed) - 1
	w.armed[i].cr.watchSlot = -1
	if i != last {
		w.armed[i] = w.armed[last]
		w.armed[i].cr.watchSlot = i
	}
	w.armed[last] = armedConn{}
	w.armed = w.armed[:last]
}

// scan runs when the timer fires: it starts the background read of every
// handler armed for DisconnectCheck, and sets the timer again for the
// earliest of the others, if any, but no sooner than watchSlack: when
// most handlers run longer (a slow upstream), one wake-up then serves
// several.
func (w *disconnectWatch) scan() {
	now := monoNow()
	var due []armedConn
	w.mu.Lock()
	next := time.Duration(-1)
	for i := 0; i < len(w.armed); {
		a := w.armed[i]
		if wait := DisconnectCheck - time.Duration(now-a.at); wait > 0 {
			if next < 0 || wait < next {
				next = wait
			}
			i++
			continue
		}
		w.removeAt(i)
		due = append(due, a)
	}
	if next >= 0 {
		w.timer.Reset(max(next, watchSlack))
	} else {
		w.running = false
	}
	w.mu.Unlock()
	for _, a := range due {
		// A read waits for the client: each on its own goroutine.
		go a.cr.backgroundRead(a.arm)
	}
}

// watchSlack is how late a background read may start, for scan to start
// several at once.
const watchSlack = DisconnectCheck / 8
