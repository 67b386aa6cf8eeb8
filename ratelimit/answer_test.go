package ratelimit

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestRetryAfterSeconds(t *testing.T) {
	for _, tt := range []struct {
		d          Decision
		retry, rst int64
	}{
		{Decision{Allowed: true}, 0, 0},
		{Decision{Allowed: true, ResetAfter: time.Nanosecond}, 0, 1},
		{Decision{Allowed: true, ResetAfter: 114 * time.Second}, 0, 114},
		{Decision{Allowed: true, ResetAfter: 114*time.Second + 1}, 0, 115},
		{Decision{}, 1, 1},
		{Decision{RetryAfter: time.Nanosecond, ResetAfter: time.Hour}, 1, 1},
		{Decision{RetryAfter: 80300 * time.Millisecond, ResetAfter: time.Hour}, 81, 81},
		{Decision{RetryAfter: 300 * time.Second}, 300, 300},
	} {
		if got := tt.d.RetryAfterSeconds(); got != tt.retry {
			t.Errorf("%+v.RetryAfterSeconds() = %d, want %d", tt.d, got, tt.retry)
		}
		if got := tt.d.ResetSeconds(); got != tt.rst {
			t.Errorf("%+v.ResetSeconds() = %d, want %d", tt.d, got, tt.rst)
		}
	}
}

// TestAnswerProperties drives random limits of every algorithm, alone and
// in pairs, with random request timings and checks what a client is told
// (Decision.RetryAfterSeconds and ResetSeconds, the integers of the
// Retry-After and RateLimit fields):
//
//   - an admission's t is at most the deciding limit's window in whole
//     seconds (the w of RateLimit-Policy);
//   - a refusal's t is its Retry-After, at most the longest window, except
//     for a SlidingWindow limit, whose wait can exceed its window by
//     n×Window/Count;
//   - a client that waits the Retry-After it was sent is admitted.
func TestAnswerProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 5))
	windows := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 7 * time.Second, time.Minute, 5 * time.Minute}
	randomLimit := func() Limit {
		l := Limit{Window: windows[rng.IntN(len(windows))], Algorithm: Algorithm(rng.IntN(3))}
		switch rng.IntN(3) {
		case 0:
			l.Count = 1 + rng.Int64N(3)
		case 1:
			l.Count = 1 + rng.Int64N(20)
		default:
			l.Count = 1 + rng.Int64N(1500)
		}
		return l
	}
	refusals, admissions := 0, 0
	for run := range 400 {
		limits := []Limit{randomLimit()}
		if run%3 == 0 {
			limits = append(limits, randomLimit())
		}
		states := make([]State, len(limits))
		take := func(now, n int64) Decision {
			// Store.Take's rule: all or nothing across the limits.
			var d Decision
			next := make([]State, len(limits))
			for i, l := range limits {
				var di Decision
				next[i], di = l.Take(states[i], now, n)
				d = Combine(d, i, di)
			}
			if d.Allowed {
				copy(states, next)
			}
			return d
		}
		longest := limits[0].Window
		minCount := limits[0].Count
		for _, l := range limits {
			longest = max(longest, l.Window)
			minCount = min(minCount, l.Count)
		}
		now := time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC).UnixNano() + rng.Int64N(int64(time.Hour))
		for range 200 {
			switch rng.IntN(4) {
			case 0: // a burst: same instant
			case 1:
				now += rng.Int64N(int64(time.Second))
			case 2:
				now += rng.Int64N(int64(longest))
			default:
				now += rng.Int64N(2 * int64(longest))
			}
			n := 1 + rng.Int64N(min(minCount, 3))
			d := take(now, n)
			w := limits[d.Limit].Window
			wSec := ceilSeconds(w)
			if d.Allowed {
				admissions++
				if got := d.ResetSeconds(); got <= 0 || got > wSec {
					t.Fatalf("%v: Take(%d) = %+v: t = %d, want 1 ≤ t ≤ w = %d", limits, n, d, got, wSec)
				}
				continue
			}
			refusals++
			retry := d.RetryAfterSeconds()
			if got := d.ResetSeconds(); got != retry {
				t.Fatalf("%v: Take(%d) = %+v: t = %d, want Retry-After %d", limits, n, d, got, retry)
			}
			bound := ceilSeconds(longest) // the longest wait of the refusing limits
			for _, l := range limits {
				if l.Algorithm == SlidingWindow {
					bound = max(bound, ceilSeconds(l.Window+time.Duration((n*int64(l.Window)+l.Count-1)/l.Count)))
				}
			}
			if retry > bound {
				t.Fatalf("%v: Take(%d) = %+v: Retry-After %d, want at most %d", limits, n, d, retry, bound)
			}
			now += retry * int64(time.Second)
			if d2 := take(now, n); !d2.Allowed {
				t.Fatalf("%v: Take(%d) = %+v, Retry-After %d; %ds later Take(%d) = %+v, want allowed", limits, n, d, retry, retry, n, d2)
			}
		}
	}
	if refusals < 1000 || admissions < 1000 {
		t.Errorf("%d refusals, %d admissions: the random timings cover too little", refusals, admissions)
	}
}
