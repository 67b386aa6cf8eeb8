package redisstore

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

// take calls s.Take and fails the test on an error.
func take(t *testing.T, s *Store, key string, n int64, limits ...ratelimit.Limit) ratelimit.Decision {
	t.Helper()
	d, err := s.Take(ctx, key, n, limits...)
	if err != nil {
		t.Fatalf("Take(%q, %d, %v): %v", key, n, limits, err)
	}
	return d
}

// roundTrips returns what f costs in round trips and cache hits.
func roundTrips(s *Store, f func()) (trips, hits uint64) {
	before := s.Stats()
	f()
	after := s.Stats()
	return after.RoundTrips - before.RoundTrips, after.CacheHits - before.CacheHits
}

// TestCacheRefusals steps the local clock that the cache reads and checks
// that refusals come from the cache, without round trips, with the
// numbers Redis gives, shrinking exactly as the clock moves, until the
// counter could admit again, when the Take goes to Redis.
func TestCacheRefusals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var clock atomic.Int64
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	s.localNow = clock.Load
	direct := newStore(t, Options{Addrs: []string{srv.Addr()}, CacheSize: -1})
	for _, a := range []ratelimit.Algorithm{ratelimit.SlidingWindow, ratelimit.GCRA, ratelimit.FixedWindow} {
		t.Run(a.String(), func(t *testing.T) {
			key := t.Name()
			l := ratelimit.Limit{Count: 3, Window: 24 * time.Hour, Algorithm: a}
			other := ratelimit.Limit{Count: 100, Window: time.Hour}
			for range 3 {
				take(t, s, key, 1, l, other)
			}
			var first ratelimit.Decision
			if trips, _ := roundTrips(s, func() { first = take(t, s, key, 1, l, other) }); trips != 1 || first.Allowed {
				t.Fatalf("4th Take = %+v in %d round trips, want refused in 1", first, trips)
			}

			var cached ratelimit.Decision
			trips, hits := roundTrips(s, func() { cached = take(t, s, key, 1, l, other) })
			if trips != 0 || hits != 1 || cached.Allowed {
				t.Fatalf("5th Take = %+v in %d round trips, %d cache hits, want refused from the cache", cached, trips, hits)
			}
			// The numbers are Redis's, up to the time that passed.
			want := take(t, direct, key, 1, l, other)
			if cached.Limit != want.Limit || cached.Remaining != want.Remaining ||
				(cached.RetryAfter-want.RetryAfter).Abs() > time.Second || (cached.ResetAfter-want.ResetAfter).Abs() > time.Second {
				t.Errorf("cached refusal %+v, Redis says %+v", cached, want)
			}
			if cached.RetryAfter > first.RetryAfter {
				t.Errorf("cached RetryAfter %v > first refusal's %v", cached.RetryAfter, first.RetryAfter)
			}

			// RetryAfter shrinks exactly as the local clock moves.
			step := cached.RetryAfter / 2
			clock.Add(int64(step))
			later := take(t, s, key, 1, l, other)
			if later.Allowed || later.RetryAfter != cached.RetryAfter-step {
				t.Errorf("%v later: cached Take = %+v, want refused with RetryAfter %v", step, later, cached.RetryAfter-step)
			}
			// Once the snapshot would admit, the Take goes to Redis, which
			// (its clock has not moved as far) refuses and is cached again.
			clock.Add(int64(cached.RetryAfter))
			var again ratelimit.Decision
			if trips, _ := roundTrips(s, func() { again = take(t, s, key, 1, l, other) }); trips != 1 || again.Allowed {
				t.Errorf("after RetryAfter on the local clock: Take = %+v in %d round trips, want refused by Redis in 1", again, trips)
			}
			if trips, hits := roundTrips(s, func() { take(t, s, key, 1, l, other) }); trips != 0 || hits != 1 {
				t.Errorf("then: %d round trips, %d cache hits, want 0, 1", trips, hits)
			}
			// More events are refused from the cache too; peeks and other
			// limits go to Redis.
			if trips, hits := roundTrips(s, func() { take(t, s, key, 2, other, l) }); trips != 0 || hits != 1 {
				t.Errorf("Take(n=2) of a refused key: %d round trips, %d cache hits, want 0, 1", trips, hits)
			}
			if trips, _ := roundTrips(s, func() { take(t, s, key, 0, l) }); trips != 1 {
				t.Errorf("peek: %d round trips, want 1", trips)
			}
			if trips, _ := roundTrips(s, func() { take(t, s, key, 1, l, ratelimit.Limit{Count: 9, Window: time.Hour}) }); trips != 1 {
				t.Errorf("Take with a limit the cache does not know: %d round trips, want 1", trips)
			}

		})
	}
}

// TestCacheDroppedWhenAdmitted checks that a Take this process sees
// admitted for a key drops the key's snapshot, so that the cache never
// answers from a state it knows to be stale.
func TestCacheDroppedWhenAdmitted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	small, large := ratelimit.Limit{Count: 1, Window: time.Hour}, ratelimit.Limit{Count: 10, Window: time.Hour}
	take(t, s, "k", 1, small, large)
	if d := take(t, s, "k", 1, small, large); d.Allowed {
		t.Fatalf("2nd Take = %+v, want refused", d)
	}
	take(t, s, "k", 5, large) // admitted: large now holds 6
	var d ratelimit.Decision
	if trips, _ := roundTrips(s, func() { d = take(t, s, "k", 5, small, large) }); trips != 1 || d.Remaining != 0 || d.Limit != 0 {
		t.Errorf("Take after an admitted one = %+v in %d round trips, want Redis's refusal by limit 0 with Remaining 0", d, trips)
	}
}

// TestCacheFlood checks that a flood of refused Takes on one key costs
// about one round trip per goroutine, not one per Take.
func TestCacheFlood(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	l := ratelimit.Limit{Count: 10, Window: time.Hour, Algorithm: ratelimit.GCRA}
	take(t, s, "flood", 10, l)
	const goroutines, each = 8, 500
	trips, hits := roundTrips(s, func() {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					if d, err := s.Take(ctx, "flood", 1, l); err != nil || d.Allowed {
						t.Errorf("Take = %+v, %v, want refused", d, err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
	if trips > goroutines || hits < goroutines*each-goroutines {
		t.Errorf("%d refused Takes: %d round trips, %d cache hits, want at most %d round trips", goroutines*each, trips, hits, goroutines)
	}
}

// TestCacheNeverRefusesWhatRedisAdmits runs on the real clocks with short
// windows: a peek (always sent to Redis) that finds room is followed by a
// Take that must not be refused by the cache; cached refusals have
// RetryAfters that never grow; and the key is admitted again after its
// reset.
func TestCacheNeverRefusesWhatRedisAdmits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	for _, a := range []ratelimit.Algorithm{ratelimit.SlidingWindow, ratelimit.GCRA, ratelimit.FixedWindow} {
		t.Run(a.String(), func(t *testing.T) {
			l := ratelimit.Limit{Count: 5, Window: 300 * time.Millisecond, Algorithm: a}
			key := t.Name()
			for take(t, s, key, 1, l).Allowed {
			}
			deadline := time.Now().Add(redistest.ReadyTimeout)
			cachedHits, lastRetry := 0, time.Duration(1<<62)
			for {
				peek := take(t, s, key, 0, l)
				var d ratelimit.Decision
				_, hits := roundTrips(s, func() { d = take(t, s, key, 1, l) })
				if hits == 1 {
					cachedHits++
					if peek.Remaining >= 1 {
						t.Fatalf("Redis had room (peek %+v), then the cache refused: %+v", peek, d)
					}
					if d.RetryAfter > lastRetry {
						t.Errorf("cached RetryAfter grew from %v to %v", lastRetry, d.RetryAfter)
					}
					lastRetry = d.RetryAfter
				} else {
					lastRetry = 1 << 62
				}
				if d.Allowed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not admitted again after %v", redistest.ReadyTimeout)
				}
			}
			if cachedHits == 0 {
				t.Errorf("no refusal came from the cache")
			}
		})
	}
}

func TestCacheBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, CacheSize: 64})
	l := ratelimit.Limit{Count: 1, Window: time.Hour}
	for i := range 1000 {
		key := fmt.Sprint("bounded/", i)
		take(t, s, key, 1, l)
		if d := take(t, s, key, 1, l); d.Allowed {
			t.Fatalf("Take(%q) = %+v, want refused", key, d)
		}
	}
	if n := s.Stats().CacheEntries; n > 64 || n < 32 {
		t.Errorf("CacheEntries = %d after 1000 refused keys, want at most CacheSize 64 (and not far below)", n)
	}
}
