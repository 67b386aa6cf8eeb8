package session

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBucket(t *testing.T) {
	for _, tt := range []struct {
		n    uint32
		want int
	}{{1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {8, 3}, {9, 4}, {1024, 10}, {1025, 11}, {math.MaxUint32, 11}} {
		if got := bucket(tt.n); got != tt.want {
			t.Errorf("bucket(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

func TestIPTrackerDistribution(t *testing.T) {
	c := &clock{t0}
	tr, err := NewIPTracker(IPTrackerOptions{Window: time.Hour, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	// One school with 30 sessions, two homes with 1 and 2.
	for range 30 {
		tr.Allow("school")
	}
	tr.Allow("home1")
	tr.Allow("home2")
	tr.Allow("home2")
	if d := tr.Distribution(); !d.Start.IsZero() {
		t.Errorf("Distribution before a window ended = %+v, want zero", d)
	}
	c.t = t0.Add(time.Hour)
	got := tr.Distribution()
	want := Distribution{Start: t0, Window: time.Hour, Addresses: 3, Sessions: 33}
	want.Buckets[0], want.Buckets[1], want.Buckets[5] = 1, 1, 1 // 1, 2, 17–32
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Distribution (-got +want):\n%s", diff)
	}
	if cur := tr.Current(); cur.Sessions != 0 || !cur.Start.Equal(t0.Add(time.Hour)) {
		t.Errorf("Current after rollover = %+v, want an empty window at t0+1h", cur)
	}
	count, sum, buckets := got.Histogram()
	wantBuckets := map[float64]uint64{1: 1, 2: 2, 4: 2, 8: 2, 16: 2, 32: 3, 64: 3, 128: 3, 256: 3, 512: 3, 1024: 3}
	if count != 3 || sum != 33 || !cmp.Equal(buckets, wantBuckets) {
		t.Errorf("Histogram() = %d, %v, %v; want 3, 33, %v", count, sum, buckets, wantBuckets)
	}
	// Idle for three windows: the last complete window was empty.
	c.t = t0.Add(4 * time.Hour)
	if d := tr.Distribution(); d.Sessions != 0 || !d.Start.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("Distribution after idle windows = %+v, want empty window at t0+3h", d)
	}
}

func TestIPTrackerCap(t *testing.T) {
	c := &clock{t0}
	tr, err := NewIPTracker(IPTrackerOptions{Window: time.Minute, MaxNewPerWindow: 3, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, true, true, false, false} {
		if got := tr.Allow("a"); got != want {
			t.Errorf("Allow(a) #%d = %v, want %v", i+1, got, want)
		}
	}
	if !tr.Allow("b") {
		t.Errorf("Allow(b) = false: another address was capped")
	}
	if d := tr.Current(); d.Refused != 2 || d.Sessions != 6 {
		t.Errorf("Current = %+v, want Refused 2, Sessions 6", d)
	}
	c.t = t0.Add(time.Minute)
	if !tr.Allow("a") {
		t.Errorf("Allow(a) in the next window = false")
	}
}

func TestIPTrackerBounded(t *testing.T) {
	c := &clock{t0}
	tr, err := NewIPTracker(IPTrackerOptions{MaxKeys: 100, MaxNewPerWindow: 1, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if !tr.Allow(fmt.Sprintf("10.0.%d.%d", i/256, i%256)) {
			t.Fatalf("Allow refused a first session from a new address")
		}
	}
	if n := len(tr.counts); n != 100 {
		t.Errorf("tracked %d keys, want 100", n)
	}
	if d := tr.Current(); d.Untracked != 900 || d.Addresses != 100 {
		t.Errorf("Current = %+v, want Untracked 900, Addresses 100", d)
	}
	// A tracked address is still capped when the table is full.
	if tr.Allow("10.0.0.0") {
		t.Errorf("Allow of a tracked address over the cap = true")
	}
}

func TestIPTrackerValidates(t *testing.T) {
	if _, err := NewIPTracker(IPTrackerOptions{Window: time.Millisecond, MaxKeys: -1, MaxNewPerWindow: -1}); err == nil {
		t.Errorf("NewIPTracker accepted bad options")
	}
}

func TestIPTrackerAllowAllocations(t *testing.T) {
	tr, err := NewIPTracker(IPTrackerOptions{Now: (&clock{t0}).Now})
	if err != nil {
		t.Fatal(err)
	}
	tr.Allow("198.51.100.7")
	if n := testing.AllocsPerRun(1000, func() { tr.Allow("198.51.100.7") }); n != 0 {
		t.Errorf("Allow allocs = %v, want 0", n)
	}
}
