package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// charger returns s as a ratelimit.Charger, or skips the test: Charge is
// optional for a Store.
func charger(t *testing.T, s ratelimit.Store) ratelimit.Charger {
	t.Helper()
	c, ok := s.(ratelimit.Charger)
	if !ok {
		t.Skipf("%T does not implement ratelimit.Charger", s)
	}
	return c
}

// charge calls s.Charge and fails the test on an error.
func charge(t *testing.T, s ratelimit.Charger, key string, n int64, limits ...ratelimit.Limit) ratelimit.Decision {
	t.Helper()
	d, err := s.Charge(context.Background(), key, n, limits...)
	if err != nil {
		t.Fatalf("Charge(%q, %d, %v) error: %v", key, n, limits, err)
	}
	return d
}

// testChargePastLimit charges what fits, then more than remains: the
// counter goes past the limit, and what comes next is refused.
func testChargePastLimit(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	c, key, l := charger(t, s), t.Name(), long(10, a)
	if d := charge(t, c, key, 4, l); !d.Allowed || d.Remaining != 6 {
		t.Errorf("Charge(%q, 4, %v) = %+v, want allowed with Remaining 6", key, l, d)
	}
	d := charge(t, c, key, 15, l)
	if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 {
		t.Errorf("Charge(%q, 15, %v) on 6 remaining = %+v, want not fitted, Remaining 0, RetryAfter > 0", key, l, d)
	}
	if d := take(t, s, key, 1, l); d.Allowed {
		t.Errorf("Take(%q, 1, %v) after a charge past the limit = %+v, want refused", key, l, d)
	}
	wantRemaining(t, s, key, l, 0)
	// A Take of more than the limit is refused whatever the counter
	// holds; a Charge of it still counts.
	key2 := key + "/more"
	if d := charge(t, c, key2, 11, l); d.Allowed || d.Remaining != 0 {
		t.Errorf("Charge(%q, 11, %v) on an empty counter = %+v, want not fitted, Remaining 0", key2, l, d)
	}
	wantRemaining(t, s, key2, l, 0)
}

// testChargeEveryLimit checks that a Charge counts under every limit,
// even those it does not fit under (unlike Take, all or nothing).
func testChargeEveryLimit(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	c, key := charger(t, s), t.Name()
	small, big := long(5, a), long(100, a)
	if d := charge(t, c, key, 8, small, big); d.Allowed || d.Limit != 0 {
		t.Errorf("Charge(%q, 8, %v, %v) = %+v, want not fitted, decided by limit 0", key, small, big, d)
	}
	wantRemaining(t, s, key, big, 92)
	wantRemaining(t, s, key, small, 0)
	// A limit listed twice is one counter, charged once.
	key2 := key + "/twice"
	if d := charge(t, c, key2, 3, big, big); !d.Allowed || d.Remaining != 97 {
		t.Errorf("Charge(%q, 3, %v, %v) = %+v, want allowed with Remaining 97", key2, big, big, d)
	}
	wantRemaining(t, s, key2, big, 97)
}

// testChargeRetryAfterEveryLimit checks that a Charge's RetryAfter is
// the wait until one more event fits under every limit, those the events
// fitted under included: a limit the charge filled exactly refuses the
// next event too, possibly for longer than the limit the charge went
// past. A Take of one event right after is refused, and says no longer
// a wait (time only passed since).
func testChargeRetryAfterEveryLimit(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	c, key := charger(t, s), t.Name()
	filled, over := long(3, a), ratelimit.Limit{Count: 10, Window: time.Hour, Algorithm: a}
	if d := take(t, s, key, 9, over); !d.Allowed {
		t.Fatalf("Take(%q, 9, %v) = %+v, want allowed", key, over, d)
	}
	d := charge(t, c, key, 3, filled, over)
	if d.Allowed || d.Remaining != 0 {
		t.Fatalf("Charge(%q, 3, %v, %v) = %+v, want not fitted (under %v), Remaining 0", key, filled, over, d, over)
	}
	next := take(t, s, key, 1, filled, over)
	if next.Allowed || d.RetryAfter < next.RetryAfter {
		t.Errorf("Charge(%q, 3, %v, %v) = %+v, then Take(%q, 1) = %+v: want that refused, and the charge's RetryAfter no shorter than its",
			key, filled, over, d, key, next)
	}
}

func testChargeErrors(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	c, key, l := charger(t, s), t.Name(), long(5, a)
	ctx := context.Background()
	if _, err := c.Charge(ctx, key, 1); !errors.Is(err, ratelimit.ErrNoLimits) {
		t.Errorf("Charge(%q, 1) without limits: error %v, want ErrNoLimits", key, err)
	}
	if _, err := c.Charge(ctx, key, -1, l); err == nil {
		t.Errorf("Charge(%q, -1, %v): no error", key, l)
	}
	if _, err := c.Charge(ctx, key, 9, l, ratelimit.Limit{Count: 0, Window: time.Second, Algorithm: a}); err == nil {
		t.Errorf("Charge(%q, 9, %v, an invalid limit): no error", key, l)
	}
	wantRemaining(t, s, key, l, 5) // errors record nothing
}

// testChargeDebt checks, on a stepped clock, that a charge past the
// limit is repaid before anything more is admitted: RetryAfter is the
// exact wait for one event, and the debt is at most one Count however
// large the charge.
func testChargeDebt(t *testing.T, s ratelimit.Store, clock *Clock, a ratelimit.Algorithm) {
	c, key := charger(t, s), t.Name()
	l := ratelimit.Limit{Count: 10, Window: time.Minute, Algorithm: a}
	clock.Advance(7 * time.Second)
	d := charge(t, c, key, 25, l)
	if d.Allowed || d.RetryAfter <= 0 {
		t.Fatalf("Charge(%q, 25, %v) = %+v, want not fitted with a RetryAfter", key, l, d)
	}
	huge := charge(t, c, key+"/huge", 1<<40, l)
	twice := charge(t, c, key+"/twice", 20, l)
	if huge.RetryAfter != twice.RetryAfter || huge.RetryAfter < d.RetryAfter {
		t.Errorf("Charge of 2⁴⁰ waits %v, of twice the limit %v, of 25 %v: want the first two equal (the debt is at most one Count) and no shorter than the third",
			huge.RetryAfter, twice.RetryAfter, d.RetryAfter)
	}
	if huge.RetryAfter > 2*l.Window {
		t.Errorf("Charge of 2⁴⁰ waits %v, want at most two windows (%v)", huge.RetryAfter, 2*l.Window)
	}
	clock.Advance(d.RetryAfter - 1)
	if early := take(t, s, key, 1, l); early.Allowed {
		t.Fatalf("charged with RetryAfter %v, but 1ns before that Take(%q, 1, %v) = %+v", d.RetryAfter, key, l, early)
	}
	clock.Advance(1)
	if later := take(t, s, key, 1, l); !later.Allowed {
		t.Fatalf("charged with RetryAfter %v, but after it Take(%q, 1, %v) = %+v", d.RetryAfter, key, l, later)
	}
}
