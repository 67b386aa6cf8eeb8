package memrelease

import (
	"runtime"
	"testing"
	"time"
)

// TestTrigger: a release once the open connections have fallen to half
// their peak or less, by at least MinDrop, and at most one per Interval;
// the clock is the test's.
func TestTrigger(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	type step struct {
		at   time.Duration // after t0
		open int64
		want bool
	}
	for _, tc := range []struct {
		name  string
		trig  Trigger
		steps []step
	}{
		{"a burst ends", Trigger{}, []step{
			{0, 10, false}, {1 * time.Second, 20000, false}, {2 * time.Second, 15000, false},
			{3 * time.Second, 10001, false}, {4 * time.Second, 9800, true}, {5 * time.Second, 9790, false},
		}},
		{"a release waits for the fall to slow", Trigger{}, []step{
			{0, 20000, false}, {1 * time.Second, 9000, false}, {2 * time.Second, 6000, false},
			{3 * time.Second, 3000, false}, {4 * time.Second, 30, false}, {5 * time.Second, 30, true},
		}},
		{"another release waits for the interval", Trigger{}, []step{
			{0, 20000, false}, {1 * time.Second, 9000, false}, {2 * time.Second, 9000, true},
			{3 * time.Second, 40, false}, {4 * time.Second, 40, false},
			{11 * time.Second, 40, false}, {12 * time.Second, 40, true}, {30 * time.Second, 0, false},
		}},
		{"a fall smaller than MinDrop is no burst", Trigger{}, []step{
			{0, 1998, false}, {time.Second, 999, false}, {2 * time.Second, 999, false},
			{3 * time.Second, 0, false}, {4 * time.Second, 0, true},
		}},
		{"steady churn never releases", Trigger{}, []step{
			{0, 300, false}, {time.Second, 20, false}, {2 * time.Second, 500, false}, {3 * time.Second, 0, false},
			{4 * time.Second, 0, false},
		}},
		{"the peak restarts at a release", Trigger{}, []step{
			{0, 4000, false}, {time.Second, 2000, false}, {2 * time.Second, 2000, true},
			{20 * time.Second, 1500, false}, {21 * time.Second, 1001, false}, {22 * time.Second, 1000, true},
		}},
		{"settings", Trigger{MinDrop: 10, Interval: time.Minute}, []step{
			{0, 20, false}, {time.Second, 10, false}, {2 * time.Second, 9, true}, {3 * time.Second, 100, false},
			{4 * time.Second, 0, false}, {5 * time.Second, 0, false}, {62 * time.Second, 0, true},
		}},
		{"a rising count never releases", Trigger{}, []step{
			{0, 0, false}, {time.Second, 5000, false}, {2 * time.Second, 20000, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.trig
			for i, s := range tc.steps {
				if got := tr.Observe(t0.Add(s.at), s.open); got != s.want {
					t.Fatalf("step %d (%v, %d open): release %v, want %v", i, s.at, s.open, got, s.want)
				}
			}
		})
	}
}

// TestWatch: the loop releases on the tick the trigger says, reports the
// peak, the count and what was returned, and stops when told.
func TestWatch(t *testing.T) {
	ticks := make(chan time.Time)
	quit := make(chan struct{})
	counts := []int64{100, 6000, 20000, 2000, 1900, 0}
	opens := make(chan int64, len(counts)) // one count a tick, in order
	for _, n := range counts {
		opens <- n
	}
	open := func() int64 { return <-opens }
	frees := 0
	free := func() uint64 { frees++; return 42 << 20 }
	var got []Release
	ended := make(chan struct{})
	go func() {
		watch(ticks, quit, open, free, func(r Release) { got = append(got, r) })
		close(ended)
	}()
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for i := range counts {
		ticks <- t0.Add(time.Duration(i) * time.Second)
	}
	close(quit)
	<-ended
	if frees != 1 || len(got) != 1 || got[0] != (Release{Peak: 20000, Open: 1900, Returned: 42 << 20}) {
		t.Fatalf("%d releases, reported %+v; want one, {Peak:20000 Open:1900 Returned:%d}", frees, got, 42<<20)
	}
}

// sink keeps the test's allocations from being optimized away.
var sink [][]byte

// TestReleaseReturnsFreePages: memory that was in use and is no longer is
// back with the system after release, not kept for reuse.
func TestReleaseReturnsFreePages(t *testing.T) {
	for range 64 {
		sink = append(sink, make([]byte, 1<<20))
	}
	for _, b := range sink {
		b[0] = 1 // touched: resident
	}
	sink = nil
	runtime.GC() // the 64 MiB are free, still the process's
	before := released()
	returned := release()
	if returned < 48<<20 {
		t.Errorf("release returned %d MiB, want most of the 64 MiB freed", returned>>20)
	}
	if after := released(); after-before < 48<<20 {
		t.Errorf("released pages grew by %d MiB, want most of the 64 MiB freed", (after-before)>>20)
	}
}
