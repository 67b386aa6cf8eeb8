// Package heapfloor keeps Go's garbage collector from running more often
// than every Floor bytes of allocation while the live heap is small.
//
// With the default GOGC=100 the collector runs each time the heap has
// grown by its live size. A gateway's live heap is small (a few MiB until
// the store holds many keys), so it collected every few thousand requests,
// and on one core each collection held answers back: at 1 000 requests/s,
// p99 latency was 5–7 ms at the default against 1.4–2.1 ms with the
// collector running every ~30 MiB (docs/benchmarks.md). After each
// collection this package sets GOGC so that the next one comes once the
// heap has grown by max(live, Floor): a floor on the collector's interval,
// not a bigger heap for a big live set (at 1 M tracked keys the store alone
// is ~29 MiB live, and GOGC is back to 100).
//
// The cost is memory: up to Floor bytes of garbage between collections.
// A memory limit (GOMEMLIMIT) still holds: the runtime collects when it is
// reached, whatever GOGC says. The tuning is the runtime's documented
// interface (debug.SetGCPercent after each cycle, seen with runtime.AddCleanup
// on a sentinel), the technique of GC tuners such as Uber's.
package heapfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// state is process-wide: there is one collector.
var state struct {
	mu      sync.Mutex
	floor   uint64 // 0: off
	users   int    // Starts not yet Stopped
	base    int    // GOGC before Start: the percentage never gone below
	percent int    // the percentage last set
	gen     uint64 // bumped by Start and Stop: older sentinels stand down
	cycles  uint64 // collections seen (for tests)
}

// Start makes the collector wait for at least floor bytes of new heap
// between collections, until as many Stops as Starts. It keeps GOGC's
// current value as the least it sets (100 by default). A later Start's
// floor replaces an earlier one's. floor 0 does nothing.
func Start(floor uint64) {
	if floor == 0 {
		return
	}
	state.mu.Lock()
	state.users++
	if state.floor == 0 {
		state.base = gogc()
		state.percent = state.base
	}
	state.floor = floor
	state.gen++
	gen := state.gen
	state.mu.Unlock()
	if state.base < 0 {
		return // GOGC=off: nothing to raise
	}
	tune(gen)
	watch(gen)
}

// Stop ends one Start; the last gives GOGC back the value it had before
// the first.
func Stop() {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.users == 0 {
		return
	}
	if state.users--; state.users > 0 {
		return
	}
	state.floor = 0
	state.gen++
	debug.SetGCPercent(state.base)
}

// sentinel is allocated once a cycle; its cleanup runs after the
// collection that found it unreachable. (A pointer field keeps it out of
// the tiny allocator, whose blocks may outlive their objects.)
type sentinel struct{ _ *byte }

func watch(gen uint64) {
	runtime.AddCleanup(new(sentinel), collected, gen)
}

// collected runs on the runtime's cleanup goroutine after a collection.
func collected(gen uint64) {
	state.mu.Lock()
	current := gen == state.gen
	if current {
		state.cycles++
	}
	state.mu.Unlock()
	if !current {
		return
	}
	tune(gen)
	watch(gen)
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// gogc returns the current GOGC percentage (negative: off).
func gogc() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// tune sets GOGC from the live heap the last collection found.
func tune(gen uint64) {
	state.mu.Lock()
	defer state.mu.Unlock()
	if gen != state.gen {
		return
	}
	metrics.Read(liveSample)
	var live uint64
	if liveSample[0].Value.Kind() == metrics.KindUint64 {
		live = liveSample[0].Value.Uint64()
	}
	p := Percent(live, state.floor, state.base)
	// debug.SetGCPercent stops the world briefly: only for a change of
	// more than a tenth.
	if d := p - state.percent; d*10 > state.percent || -d*10 > state.percent {
		debug.SetGCPercent(p)
		state.percent = p
	}
}

// minLive is the live heap assumed when less is measured: the runtime's
// own floor under the heap goal is 4 MiB × GOGC/100, so a GOGC computed
// from a smaller live heap would put the first collections far above
// floor.
const minLive = 4 << 20

// Percent returns the GOGC that makes the heap grow by at least floor
// bytes over live before the next collection, and never less than base.
func Percent(live, floor uint64, base int) int {
	live = max(live, minLive)
	p := floor / live * 100
	p += floor % live * 100 / live
	if p < uint64(base) {
		return base
	}
	return int(p)
}

// cycles returns how many collections the tuner has seen since the
// process started.
func cycles() uint64 {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.cycles
}

// Floor returns the floor in force (0: none).
func Floor() uint64 {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.floor
}
