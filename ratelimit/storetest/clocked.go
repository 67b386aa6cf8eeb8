package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// testWorkedExample replays the "What 100/5m admits" example of
// ratelimit.Limit.Take through the store, one-event Takes at each instant.
func testWorkedExample(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	type burst struct {
		at          time.Duration // after Noon
		takes       int
		wantAllowed int
		wantRetry   time.Duration
	}
	const m, sec = time.Minute, time.Second
	bursts := map[ratelimit.Algorithm][]burst{
		ratelimit.SlidingWindow: {
			{4 * m, 101, 100, 63 * sec},
			{5*m + 3*sec, 2, 1, 3 * sec},
			{7*m + 30*sec, 50, 49, 3 * sec},
			{10 * m, 51, 50, 6 * sec},
		},
		ratelimit.GCRA: {
			{4 * m, 101, 100, 3 * sec},
			{4*m + 3*sec, 2, 1, 3 * sec},
			{6*m + 33*sec, 51, 50, 3 * sec},
			{11*m + 33*sec, 101, 100, 3 * sec},
		},
		ratelimit.FixedWindow: {
			{4 * m, 101, 100, 60 * sec},
			{5 * m, 101, 100, 300 * sec},
		},
	}[a]
	l, err := ratelimit.ParseLimit("100/5m")
	if err != nil {
		t.Fatal(err)
	}
	l.Algorithm = a
	key := t.Name()
	for _, b := range bursts {
		c.Set(Noon.Add(b.at))
		allowed := 0
		for i := range b.takes {
			d := take(t, s, key, 1, l)
			switch {
			case d.Allowed && i != allowed:
				t.Fatalf("12:%v: Take %d allowed after a refusal", b.at, i)
			case d.Allowed:
				allowed++
			case d.RetryAfter != b.wantRetry:
				t.Errorf("12:00+%v: Take(%q, 1, %v) %d = %+v, want RetryAfter %v", b.at, key, l, i, d, b.wantRetry)
			}
		}
		if allowed != b.wantAllowed {
			t.Errorf("12:00+%v: %d of %d Takes allowed, want %d", b.at, allowed, b.takes, b.wantAllowed)
		}
	}
}

// testRetryAfterIsExact checks that a refused Take passes after exactly
// RetryAfter, not a nanosecond earlier.
func testRetryAfterIsExact(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	l := ratelimit.Limit{Count: 7, Window: 3 * time.Second, Algorithm: a}
	key := t.Name()
	c.Advance(1234567 * time.Microsecond)
	for round := range 12 {
		d := take(t, s, key, 2, l)
		for d.Allowed {
			c.Advance(time.Duration(round) * 7 * time.Millisecond)
			d = take(t, s, key, 2, l)
		}
		checkRefusal(t, key, d, l.Window)
		c.Advance(d.RetryAfter - 1)
		if early := take(t, s, key, 2, l); early.Allowed {
			t.Fatalf("round %d: refused with RetryAfter %v, but 1ns before that Take(%q, 2, %v) = %+v", round, d.RetryAfter, key, l, early)
		}
		c.Advance(1)
		if later := take(t, s, key, 2, l); !later.Allowed {
			t.Fatalf("round %d: refused with RetryAfter %v, but after it Take(%q, 2, %v) = %+v", round, d.RetryAfter, key, l, later)
		}
	}
}

// testResetAfterEmpties checks ResetAfter: after it the full Count is
// available, and not a nanosecond before (FixedWindow, GCRA); for
// SlidingWindow, after it the current window has ended, so the previous
// window's events no longer count and the Count is back one Window later.
func testResetAfterEmpties(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	l := ratelimit.Limit{Count: 10, Window: time.Minute, Algorithm: a}
	key := t.Name()
	c.Advance(17 * time.Second)
	take(t, s, key, 4, l)
	c.Advance(20 * time.Second)
	d := take(t, s, key, 3, l)
	if d.ResetAfter <= 0 || d.ResetAfter > l.Window {
		t.Fatalf("Take(%q, 3, %v) = %+v, want 0 < ResetAfter ≤ %v", key, l, d, l.Window)
	}
	c.Advance(d.ResetAfter - 1)
	if p := take(t, s, key, 0, l); p.Remaining == l.Count || p.ResetAfter != 1 {
		t.Errorf("1ns before ResetAfter, Take(%q, 0, %v) = %+v, want Remaining below %d and ResetAfter 1ns", key, l, p, l.Count)
	}
	c.Advance(1)
	if a == ratelimit.SlidingWindow {
		// The 7 of the window that ended now weigh in full; they fade
		// over this window.
		if p := take(t, s, key, 0, l); p.Remaining != l.Count-7 || p.ResetAfter != l.Window {
			t.Errorf("after ResetAfter, Take(%q, 0, %v) = %+v, want Remaining %d and ResetAfter %v", key, l, p, l.Count-7, l.Window)
		}
		c.Advance(l.Window)
	}
	wantRemaining(t, s, key, l, l.Count)
	if p := take(t, s, key, 0, l); p.ResetAfter != 0 {
		t.Errorf("after ResetAfter, Take(%q, 0, %v) = %+v, want ResetAfter 0", key, l, p)
	}
}

// testAnswerProperties drives random limits with random request timings
// and checks what a client is told (Decision.ResetSeconds and
// RetryAfterSeconds, the t of the RateLimit field and Retry-After): an
// admission's t is at most the window in whole seconds; a refusal's t is
// its Retry-After, at most the window (for SlidingWindow, the window plus
// n×Window/Count); and a client that waits Retry-After seconds is
// admitted. The random source is seeded: every run takes the same steps.
func testAnswerProperties(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	rng := rand.New(rand.NewPCG(22, uint64(a)))
	windows := []time.Duration{time.Second, 1500 * time.Millisecond, 7 * time.Second, time.Minute, 5 * time.Minute}
	refusals, admissions := 0, 0
	for run := range 60 {
		l := ratelimit.Limit{Count: 1 + rng.Int64N([]int64{3, 20, 1500}[rng.IntN(3)]), Window: windows[rng.IntN(len(windows))], Algorithm: a}
		key := fmt.Sprintf("%s/%d", t.Name(), run)
		c.Advance(time.Duration(rng.Int64N(int64(time.Hour))))
		for range 100 {
			switch rng.IntN(4) {
			case 0: // a burst: same instant
			case 1:
				c.Advance(time.Duration(rng.Int64N(int64(time.Second))))
			case 2:
				c.Advance(time.Duration(rng.Int64N(int64(l.Window))))
			default:
				c.Advance(time.Duration(rng.Int64N(2 * int64(l.Window))))
			}
			n := 1 + rng.Int64N(min(l.Count, 3))
			d := take(t, s, key, n, l)
			retry := checkAnswer(t, key, n, l, d)
			if d.Allowed {
				admissions++
				continue
			}
			refusals++
			c.Advance(time.Duration(retry) * time.Second)
			if d2 := take(t, s, key, n, l); !d2.Allowed {
				t.Fatalf("Take(%q, %d, %v) = %+v, Retry-After %d; %ds later Take = %+v, want allowed", key, n, l, d, retry, retry, d2)
			}
		}
	}
	if refusals < 300 || admissions < 300 {
		t.Errorf("%d refusals, %d admissions: the random timings cover too little", refusals, admissions)
	}
}

// checkAnswer checks what a client is told of one decision d for n
// events under l: an admission's t is 1 to the window in whole seconds; a
// refusal's t is its Retry-After, at most the window (for SlidingWindow,
// the window plus n×Window/Count). It returns the refusal's Retry-After.
func checkAnswer(t *testing.T, key string, n int64, l ratelimit.Limit, d ratelimit.Decision) (retry int64) {
	t.Helper()
	wSec := ceilSeconds(l.Window)
	if d.Allowed {
		if got := d.ResetSeconds(); got <= 0 || got > wSec {
			t.Fatalf("Take(%q, %d, %v) = %+v: t = %d, want 1 ≤ t ≤ w = %d", key, n, l, d, got, wSec)
		}
		return 0
	}
	retry = d.RetryAfterSeconds()
	bound := wSec
	if l.Algorithm == ratelimit.SlidingWindow {
		bound = ceilSeconds(l.Window + time.Duration((n*int64(l.Window)+l.Count-1)/l.Count))
	}
	if got := d.ResetSeconds(); got != retry || retry > bound {
		t.Fatalf("Take(%q, %d, %v) = %+v: t = %d, Retry-After %d, want them equal and at most %d", key, n, l, d, got, retry, bound)
	}
	return retry
}

// ceilSeconds returns d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// testExpiry checks that a counter idle for long is as new, and that
// other counters keep counting meanwhile.
func testExpiry(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	l := ratelimit.Limit{Count: 3, Window: time.Second, Algorithm: a}
	idle, busy := t.Name()+"/idle", t.Name()+"/busy"
	take(t, s, idle, 3, l)
	for range 50 {
		c.Advance(100 * time.Millisecond)
		take(t, s, busy, 1, l)
	}
	wantRemaining(t, s, idle, l, 3)
	if d := take(t, s, idle, 3, l); !d.Allowed || d.Remaining != 0 {
		t.Errorf("Take(%q, 3, %v) after 5s idle = %+v, want allowed with Remaining 0", idle, l, d)
	}
	if d := take(t, s, idle, 1, l); d.Allowed {
		t.Errorf("Take(%q, 1, %v) = %+v, want refused", idle, l, d)
	}
}

// testClockBack checks that a clock that goes back neither lets more
// through nor blocks for longer than the documented windows.
func testClockBack(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	l := ratelimit.Limit{Count: 5, Window: 10 * time.Second, Algorithm: a}
	for _, back := range []time.Duration{3 * time.Second, time.Hour} {
		key := t.Name() + "/" + back.String()
		c.Set(Noon.Add(25 * time.Second))
		take(t, s, key, 5, l)
		c.Advance(-back)
		d := take(t, s, key, 1, l)
		if d.Allowed {
			t.Fatalf("%v back: Take(%q, 1, %v) = %+v, want refused", back, key, l, d)
		}
		checkRefusal(t, key, d, l.Window)
		c.Advance(d.RetryAfter)
		if d := take(t, s, key, 1, l); !d.Allowed {
			t.Errorf("%v back, then RetryAfter: Take(%q, 1, %v) = %+v, want allowed", back, key, l, d)
		}
	}
}

// testBurstAndSustained steps a key under a per-minute and a per-hour
// limit, as operators write "60/1m plus 5000/1d".
func testBurstAndSustained(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm) {
	burst := ratelimit.Limit{Count: 10, Window: time.Minute, Algorithm: ratelimit.FixedWindow}
	sustained := ratelimit.Limit{Count: 25, Window: time.Hour, Algorithm: a}
	key := t.Name()
	admitted := 0
	var last ratelimit.Decision
	for minute := range 60 {
		c.Set(Noon.Add(time.Duration(minute) * time.Minute))
		for range 15 {
			if last = take(t, s, key, 1, burst, sustained); last.Allowed {
				admitted++
			}
		}
		if minute == 0 && (last.Limit != 0 || last.RetryAfter != time.Minute) {
			t.Errorf("12:00: Take(%q, 1, %v, %v) = %+v, want refused by limit 0 for 1m", key, burst, sustained, last)
		}
		if minute == 5 && last.Limit != 1 {
			t.Errorf("12:05: Take(%q, 1, %v, %v) = %+v, want refused by limit 1", key, burst, sustained, last)
		}
	}
	// GCRA refills one per 2m24s within the hour; the windows do not.
	want := map[ratelimit.Algorithm]int{ratelimit.SlidingWindow: 25, ratelimit.FixedWindow: 25, ratelimit.GCRA: 25 + 24}[a]
	if admitted != want {
		t.Errorf("15 Takes a minute for an hour under %v and %v: %d admitted, want %d", burst, sustained, admitted, want)
	}
}
