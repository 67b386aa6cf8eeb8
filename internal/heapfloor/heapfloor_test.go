package heapfloor

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 3 * mib, floor: 32 * mib, base: 100, want: 800}, // under 4 MiB: counted as 4
		{live: 8 * mib, floor: 32 * mib, base: 100, want: 400},
		{live: 10 * mib, floor: 32 * mib, base: 100, want: 320},
		{live: 29 * mib, floor: 32 * mib, base: 100, want: 110},
		{live: 64 * mib, floor: 32 * mib, base: 100, want: 100}, // a big live set: the base
		{live: 1 << 40, floor: 32 * mib, base: 100, want: 100},
		{live: 64 * mib, floor: 32 * mib, base: 200, want: 200},
		{live: 0, floor: 32 * mib, base: 100, want: 800},
		{live: 4 * mib, floor: 1 << 40, base: 100, want: 26214400},
	} {
		if got := Percent(tc.live, tc.floor, tc.base); got != tc.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tc.live, tc.floor, tc.base, got, tc.want)
		}
	}
}

var sink []byte

// TestStartFollowsCollections: after Start, every collection is seen and
// GOGC follows the live heap; Stop gives GOGC back.
func TestStartFollowsCollections(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)

	const floor = 64 << 20
	Start(floor)
	start := cycles()
	var got uint64
	for i := 0; i < 1000 && got < 3; i++ {
		sink = make([]byte, 1<<20) // garbage for the collector
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
		got = cycles() - start
	}
	if got < 3 {
		t.Fatalf("the tuner saw %d collections after 1000 runtime.GC calls", got)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := gogc()
	if p < 100 {
		t.Fatalf("GOGC = %d under a floor of 64 MiB, want at least 100", p)
	}
	// The live heap of a test binary is a few MiB: the floor governs.
	if want := Percent(ms.HeapAlloc, floor, 100); p*10 < want*8 {
		t.Errorf("GOGC = %d, want about %d for a live heap of %d bytes", p, want, ms.HeapAlloc)
	}
	Stop()
	if p := gogc(); p != 100 {
		t.Errorf("after Stop, GOGC = %d, want 100 back", p)
	}
	// Stopped: collections no longer counted.
	n := cycles()
	runtime.GC()
	runtime.GC()
	if cycles() != n {
		t.Errorf("collections still counted after Stop")
	}
}

// A GOGC of off is left alone.
func TestStartLeavesGCOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(before)
	Start(64 << 20)
	defer Stop()
	runtime.GC()
	if p := gogc(); p >= 0 {
		t.Errorf("GOGC = %d after Start with GOGC off, want off", p)
	}
}
