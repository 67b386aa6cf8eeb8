// Package memrelease gives memory back to the system after a burst of
// client connections, instead of some minutes later.
//
// Thousands of connections held open at once (slow clients, an attack,
// a reconnecting fleet) cost their goroutines' stacks and buffers; once
// they close, Go keeps the memory for reuse and returns it only
// gradually: the next collection may be two minutes away on a quiet
// process (internal/heapfloor spaces collections out on purpose), the
// pooled buffers survive one more, and the background scavenger then
// returns a few MiB a second. After 20,000 slow connections closed,
// floodgate's resident memory stayed up for ~200 s.
//
// Watch reads the number of open connections every second; once it has
// fallen to half its peak or less, by at least MinDrop connections, and
// stopped falling fast, it collects twice (the second frees what the first left in sync.Pools)
// and returns every free page to the system (debug.FreeOSMemory), at
// most once per Interval. Outside bursts nothing happens: the collector's
// pacing, heapfloor's among it, is left alone.
package memrelease

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Defaults of a Trigger's settings.
const (
	// DefaultMinDrop is the least fall in open connections that counts
	// as the end of a burst: ~1,000 connections held some MiB.
	DefaultMinDrop = 1000
	// DefaultInterval is the least time between two releases: each
	// costs a full collection.
	DefaultInterval = 10 * time.Second
)

// A Trigger decides, from the number of open connections seen over
// time, when to release memory. The zero value uses the defaults. It is
// not safe for concurrent use.
type Trigger struct {
	MinDrop  int64         // 0: DefaultMinDrop
	Interval time.Duration // 0: DefaultInterval

	peak int64     // the most connections seen open since the last release
	prev int64     // the count at the last Observe
	last time.Time // the last release; zero: none yet
}

// Observe takes the number of connections open at now and reports
// whether to release memory now: the count has fallen to half its peak
// since the last release or less, by at least MinDrop, it fell by less
// than a quarter of MinDrop since the last Observe (the burst's
// connections have closed, not only some of them), and the last release
// was at least Interval ago. A release restarts the peak from open.
func (t *Trigger) Observe(now time.Time, open int64) bool {
	t.peak = max(t.peak, open)
	prev := t.prev
	t.prev = open
	minDrop := t.MinDrop
	if minDrop <= 0 {
		minDrop = DefaultMinDrop
	}
	interval := t.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	if t.peak-open < minDrop || open > t.peak/2 || prev-open >= minDrop/4 {
		return false
	}
	if !t.last.IsZero() && now.Sub(t.last) < interval {
		return false
	}
	t.last, t.peak = now, open
	return true
}

// Release is what one release did: the connections' peak and count, and
// the bytes returned to the system.
type Release struct {
	Peak, Open int64
	Returned   uint64
}

// Watch reads open every second and releases memory when a Trigger with
// the default settings says, calling done (if not nil) after each
// release. It returns the function that stops it.
func Watch(open func() int64, done func(Release)) (stop func()) {
	ticker := time.NewTicker(time.Second)
	quit := make(chan struct{})
	go func() {
		defer ticker.Stop()
		watch(ticker.C, quit, open, release, done)
	}()
	return func() { close(quit) }
}

// watch is Watch's loop, on ticks until quit is closed; free does the
// release and returns the bytes returned.
func watch(ticks <-chan time.Time, quit <-chan struct{}, open func() int64, free func() uint64, done func(Release)) {
	var t Trigger
	for {
		select {
		case <-quit:
			return
		case now := <-ticks:
			n := open()
			peak := max(t.peak, n)
			if !t.Observe(now, n) {
				continue
			}
			r := Release{Peak: peak, Open: n, Returned: free()}
			if done != nil {
				done(r)
			}
		}
	}
}

var releasedSample = []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}

// release collects twice and returns the free pages to the system; it
// returns how many bytes the heap's released pages grew by.
func release() uint64 {
	before := released()
	runtime.GC()
	debug.FreeOSMemory()
	if after := released(); after > before {
		return after - before
	}
	return 0
}

func released() uint64 {
	metrics.Read(releasedSample)
	if releasedSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return releasedSample[0].Value.Uint64()
}
