package memory_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return memory.New(memory.Options{})
	})
}

func TestConformanceClocked(t *testing.T) {
	storetest.RunClocked(t, func(t *testing.T, now func() time.Time) ratelimit.Store {
		return memory.New(memory.Options{Now: now})
	})
}

// TestConformanceOneShard runs the suite on one small shard.
func TestConformanceOneShard(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return memory.New(memory.Options{Shards: 1, MaxKeys: 64})
	})
}

// TestConformanceSeeded runs the suite on a store that hashes keys with
// its own function (Options.Seed).
func TestConformanceSeeded(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return memory.New(memory.Options{Seed: 1, Shards: 4, MaxKeys: 1 << 12})
	})
}

var ctx = context.Background()

func TestTakeDoesNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	s := memory.New(memory.Options{})
	var store ratelimit.Store = s
	one := []ratelimit.Limit{{Count: 1 << 30, Window: time.Second}}
	two := []ratelimit.Limit{{Count: 60, Window: time.Minute, Algorithm: ratelimit.GCRA}, {Count: 5000, Window: 24 * time.Hour}}
	six := []ratelimit.Limit{one[0], two[0], two[1], {Count: 9, Window: time.Hour}, {Count: 8, Window: time.Hour}, {Count: 7, Window: time.Hour}}
	tests := []struct {
		name string
		take func()
	}{
		{"one limit", func() { s.Take(ctx, "k", 1, one[0]) }},
		{"two limits", func() { s.Take(ctx, "k", 1, two[0], two[1]) }},
		{"six limits", func() { s.Take(ctx, "k", 1, six...) }},
		{"refused", func() { s.Take(ctx, "k", 1, six[5]) }},
		{"interface, slice", func() { store.Take(ctx, "k", 1, two...) }},
		{"clock option", func() { clocked.Take(ctx, "k", 1, two...) }},
		{"seeded", func() { seeded.Take(ctx, "a key longer than eight bytes", 1, two...) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(1000, tt.take); n != 0 {
			t.Errorf("%s: Take allocs = %v, want 0", tt.name, n)
		}
	}
}

var (
	clocked = memory.New(memory.Options{Now: storetest.NewClock(storetest.Noon).Now})
	seeded  = memory.New(memory.Options{Seed: 1})
)

// TestExactManyKeysConcurrently has goroutines take from many keys at once
// and checks that each key admitted exactly its limit.
func TestExactManyKeysConcurrently(t *testing.T) {
	s := memory.New(memory.Options{Shards: 4})
	const keys, goroutines, rounds = 200, 8, 40
	l := ratelimit.Limit{Count: 25, Window: ratelimit.MaxWindow, Algorithm: ratelimit.GCRA}
	var admitted [keys]atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				for i := range keys {
					k := (i*7 + g*13 + r) % keys
					d, err := s.Take(ctx, "key"+strconv.Itoa(k), 1, l, ratelimit.Limit{Count: 30, Window: time.Hour})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted[k].Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	for k := range admitted {
		if got := admitted[k].Load(); got != l.Count {
			t.Errorf("key%d: %d admitted by %d goroutines × %d rounds, want exactly %d", k, got, goroutines, rounds, l.Count)
		}
	}
}

// TestMaxKeysBound inserts ten times more counters than the store may
// keep, none of them expired.
func TestMaxKeysBound(t *testing.T) {
	const maxKeys = 1024
	clock := storetest.NewClock(storetest.Noon)
	s := memory.New(memory.Options{Now: clock.Now, MaxKeys: maxKeys, Shards: 16})
	l := ratelimit.Limit{Count: 10, Window: time.Hour}
	for i := range 10 * maxKeys {
		if d, err := s.Take(ctx, "flood"+strconv.Itoa(i), 1, l); err != nil || !d.Allowed {
			t.Fatalf("Take(flood%d) = %+v, %v, want allowed: a new key is never refused", i, d, err)
		}
		if st := s.Stats(); st.Keys > maxKeys {
			t.Fatalf("after %d new keys, Stats() = %+v: more than %d", i+1, st, maxKeys)
		}
	}
	st := s.Stats()
	want := memory.Stats{Keys: maxKeys, MaxKeys: maxKeys, Evictions: 9 * maxKeys, Expired: 0}
	if st != want {
		t.Errorf("after %d new keys, Stats() = %+v, want %+v", 10*maxKeys, st, want)
	}
}

// TestActiveClientSurvivesFlood checks that a client that keeps using its
// key is neither evicted nor blocked by a flood of new keys, for every
// algorithm: its counter counts on exactly.
func TestActiveClientSurvivesFlood(t *testing.T) {
	for _, a := range []ratelimit.Algorithm{ratelimit.SlidingWindow, ratelimit.GCRA, ratelimit.FixedWindow} {
		t.Run(a.String(), func(t *testing.T) {
			const maxKeys, flood = 1024, 100_000
			clock := storetest.NewClock(storetest.Noon.Add(time.Minute))
			s := memory.New(memory.Options{Now: clock.Now, MaxKeys: maxKeys})
			l := ratelimit.Limit{Count: 100, Window: time.Hour, Algorithm: a}
			const client = "203.0.113.7"
			take := func(want int64) {
				t.Helper()
				d, err := s.Take(ctx, client, 1, l)
				if err != nil || !d.Allowed || d.Remaining != want {
					t.Fatalf("Take(%q, 1, %v) = %+v, %v, want allowed with Remaining %d", client, l, d, err, want)
				}
			}
			remaining := l.Count
			for range 50 {
				remaining--
				take(remaining)
			}
			for i := range flood {
				clock.Advance(time.Microsecond)
				if d, err := s.Take(ctx, "flood/"+strconv.Itoa(i), 1, l); err != nil || !d.Allowed {
					t.Fatalf("Take(flood/%d) = %+v, %v, want allowed", i, d, err)
				}
				if i%2000 == 0 {
					remaining--
					take(remaining)
				}
			}
			if remaining != 0 {
				t.Fatalf("test bug: remaining %d", remaining)
			}
			if d, _ := s.Take(ctx, client, 1, l); d.Allowed {
				t.Errorf("Take(%q, 1, %v) = %+v after %d events, want refused", client, l, d, l.Count)
			}
			if st := s.Stats(); st.Keys > maxKeys || st.Evictions < flood-maxKeys {
				t.Errorf("Stats() = %+v, want Keys ≤ %d and Evictions ≥ %d", st, maxKeys, flood-maxKeys)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	clock := storetest.NewClock(storetest.Noon)
	s := memory.New(memory.Options{Now: clock.Now, Shards: 1, MaxKeys: 8})
	l := ratelimit.Limit{Count: 10, Window: time.Second}
	for i := range 8 {
		s.Take(ctx, "old"+strconv.Itoa(i), 1, l)
	}
	if got, want := s.Stats(), (memory.Stats{Keys: 8, MaxKeys: 8}); got != want {
		t.Fatalf("Stats() = %+v, want %+v", got, want)
	}
	// Sliding window counters expire two windows after their last event.
	clock.Advance(2 * time.Second)
	if d, _ := s.Take(ctx, "old0", 0, l); d.Remaining != 10 || d.ResetAfter != 0 {
		t.Errorf("Take(old0, 0) after expiry = %+v, want an empty counter", d)
	}
	// The shard is full of expired counters: a new one replaces some of
	// them, and nothing live is evicted.
	s.Take(ctx, "new", 1, l)
	if got := s.Stats(); got.Keys > 8 || got.Expired == 0 || got.Evictions != 0 {
		t.Errorf("Stats() = %+v, want expired counters dropped, none evicted", got)
	}
	if d, _ := s.Take(ctx, "new", 0, l); d.Remaining != 9 {
		t.Errorf("Take(new, 0) = %+v, want Remaining 9", d)
	}

	// In a shard with room, inserting sweeps expired counters too.
	s = memory.New(memory.Options{Now: clock.Now, Shards: 1})
	s.Take(ctx, "a", 1, l)
	clock.Advance(2 * time.Second)
	s.Take(ctx, "b", 1, l)
	if got := s.Stats(); got.Keys != 1 || got.Expired != 1 {
		t.Errorf("Stats() = %+v, want the expired counter swept", got)
	}
}

// TestExpiredMakeRoom fills a store, lets every counter expire, and fills
// it again: new counters mostly replace expired ones rather than evicting
// the new ones. (Sampling eight slots misses the last few expired ones.)
func TestExpiredMakeRoom(t *testing.T) {
	clock := storetest.NewClock(storetest.Noon)
	const maxKeys = 4096
	s := memory.New(memory.Options{Now: clock.Now, MaxKeys: maxKeys, Shards: 4})
	l := ratelimit.Limit{Count: 10, Window: time.Second, Algorithm: ratelimit.GCRA}
	for i := range maxKeys {
		s.Take(ctx, "old"+strconv.Itoa(i), 1, l)
	}
	clock.Advance(time.Second)
	for i := range maxKeys {
		s.Take(ctx, "new"+strconv.Itoa(i), 1, l)
	}
	// About maxKeys/9 evictions are expected: the i-th new counter finds
	// no expired one among 8 samples with probability (i/maxKeys)⁸.
	st := s.Stats()
	if st.Keys > maxKeys || st.Evictions > maxKeys/5 || st.Expired < maxKeys*3/4 {
		t.Errorf("Stats() = %+v, want at most %d evictions and most old counters expired", st, maxKeys/5)
	}
	t.Logf("%+v", st)
}

// TestMemoryReturnsAfterFlood checks that once a flood of short-lived
// keys has expired, ordinary traffic (which brings new keys) sweeps it
// away and the shard's map is rebuilt smaller.
func TestMemoryReturnsAfterFlood(t *testing.T) {
	clock := storetest.NewClock(storetest.Noon)
	s := memory.New(memory.Options{Now: clock.Now, Shards: 1, MaxKeys: 1 << 20})
	l := ratelimit.Limit{Count: 10, Window: time.Second}
	base := heap()
	for i := range 200_000 {
		s.Take(ctx, "flood"+strconv.Itoa(i), 1, l)
	}
	flooded := heap() - base
	clock.Advance(time.Minute)
	for i := range 200_000 { // 1000 new keys a second
		s.Take(ctx, "later"+strconv.Itoa(i), 1, l)
		if i%1000 == 0 {
			clock.Advance(time.Second)
		}
	}
	after := heap() - base
	st := s.Stats()
	t.Logf("heap: %d B flooded, %d B after; %+v", flooded, after, st)
	if st.Keys > 5000 { // about 2500 live: 1000 a second, each for 2–3s
		t.Errorf("Stats() = %+v, want most expired counters swept", st)
	}
	if after > flooded/4 {
		t.Errorf("heap after the flood expired is %d B, want below a quarter of %d B", after, flooded)
	}
	runtime.KeepAlive(s)
}

func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func TestOptions(t *testing.T) {
	tests := []struct {
		opts        memory.Options
		wantMaxKeys int
	}{
		{memory.Options{}, memory.DefaultMaxKeys},
		{memory.Options{MaxKeys: -5, Shards: -1}, memory.DefaultMaxKeys},
		{memory.Options{MaxKeys: 100, Shards: 3}, 100}, // 4 shards of 25
		{memory.Options{MaxKeys: 10, Shards: 64}, 8},   // 8 shards of 1
		{memory.Options{MaxKeys: 1, Shards: 1 << 30}, 1},
		{memory.Options{MaxKeys: 1000, Shards: 16}, 992},
	}
	for _, tt := range tests {
		if got := memory.New(tt.opts).Stats(); got.MaxKeys != tt.wantMaxKeys || got.Keys != 0 {
			t.Errorf("New(%+v).Stats() = %+v, want MaxKeys %d", tt.opts, got, tt.wantMaxKeys)
		}
	}
}

// TestSeedIsDeterministic: two stores with the same Seed, given the same
// Takes at the same instants past their key cap, evict the same counters,
// so they give the same decisions and Stats.
func TestSeedIsDeterministic(t *testing.T) {
	l := ratelimit.Limit{Count: 3, Window: time.Hour}
	run := func(seed uint64) (decisions []bool, st memory.Stats) {
		clock := storetest.NewClock(storetest.Noon)
		s := memory.New(memory.Options{Now: clock.Now, MaxKeys: 64, Shards: 4, Seed: seed})
		for i := range 5000 {
			clock.Advance(time.Millisecond)
			d, err := s.Take(ctx, "client/"+strconv.Itoa(i*7919%211), 1, l)
			if err != nil {
				t.Fatal(err)
			}
			decisions = append(decisions, d.Allowed)
		}
		return decisions, s.Stats()
	}
	d1, st1 := run(1)
	if st1.Evictions == 0 {
		t.Fatalf("Stats() = %+v: the test needs evictions", st1)
	}
	for range 3 {
		if d2, st2 := run(1); !slices.Equal(d1, d2) || st1 != st2 {
			t.Fatalf("Seed 1: second run's Stats() = %+v, first %+v; decisions equal: %v", st2, st1, slices.Equal(d1, d2))
		}
	}
}
