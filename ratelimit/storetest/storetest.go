// Package storetest is the conformance suite that every ratelimit.Store
// passes: the memory store with an injected clock, and the Redis store,
// which reads Redis TIME, against a real server.
//
// Run checks what holds on any clock: exact admission under concurrency,
// independence of keys and limits, all-or-nothing over several limits,
// peeks, refusals that consume nothing, errors, cancellation, and for a
// ratelimit.Charger, charges past the limit. It uses
// limits with the longest window (ratelimit.MaxWindow) so that the real
// time a test takes does not matter. RunClocked checks behaviour over time
// (the documented worked example, exact RetryAfter, expiry, a clock that
// goes back) for stores that read an injected clock.
//
// Each subtest makes its own store and runs in parallel with the others,
// so a store made by newStore must be independent of the others (or at
// least use keys no other test uses: the suite's keys start with the
// subtest's name).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// algorithms are checked one by one where behaviour depends on them.
var algorithms = []ratelimit.Algorithm{ratelimit.SlidingWindow, ratelimit.GCRA, ratelimit.FixedWindow}

// long returns count per ratelimit.MaxWindow under a, a limit that does
// not refill while a test runs.
func long(count int64, a ratelimit.Algorithm) ratelimit.Limit {
	return ratelimit.Limit{Count: count, Window: ratelimit.MaxWindow, Algorithm: a}
}

// Run checks the properties of newStore's stores that do not depend on
// their clock. newStore returns an empty store; it is called once per
// subtest, and may register cleanups with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) ratelimit.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm)
	}{
		{"ExactUnderConcurrency", testExactUnderConcurrency},
		{"AllOrNothingUnderConcurrency", testAllOrNothingUnderConcurrency},
		{"RemainingCountsDown", testRemainingCountsDown},
		{"RefusedConsumesNothing", testRefusedConsumesNothing},
		{"Peek", testPeek},
		{"MoreThanCount", testMoreThanCount},
		{"KeysIndependent", testKeysIndependent},
		{"LimitsIndependent", testLimitsIndependent},
		{"AllOrNothing", testAllOrNothing},
		{"RepeatedLimit", testRepeatedLimit},
		{"AnswerBounds", testAnswerBounds},
		{"KeyNotRetained", testKeyNotRetained},
		{"Errors", testErrors},
		{"Cancelled", testCancelled},
		{"ChargePastLimit", testChargePastLimit},
		{"ChargeEveryLimit", testChargeEveryLimit},
		{"ChargeRetryAfterEveryLimit", testChargeRetryAfterEveryLimit},
		{"ChargeErrors", testChargeErrors},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, a := range algorithms {
				t.Run(a.String(), func(t *testing.T) {
					tt.run(t, newStore(t), a)
				})
			}
		})
	}
}

// RunClocked checks the behaviour over time of stores that read an
// injected clock. newStore returns an empty store whose clock is now; it
// is called once per subtest.
func RunClocked(t *testing.T, newStore func(t *testing.T, now func() time.Time) ratelimit.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s ratelimit.Store, c *Clock, a ratelimit.Algorithm)
	}{
		{"WorkedExample", testWorkedExample},
		{"RetryAfterIsExact", testRetryAfterIsExact},
		{"ResetAfterEmpties", testResetAfterEmpties},
		{"AnswerProperties", testAnswerProperties},
		{"Expiry", testExpiry},
		{"ClockBack", testClockBack},
		{"BurstAndSustained", testBurstAndSustained},
		{"ChargeDebt", testChargeDebt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, a := range algorithms {
				t.Run(a.String(), func(t *testing.T) {
					c := NewClock(Noon)
					tt.run(t, newStore(t, c.Now), c, a)
				})
			}
		})
	}
}

// Noon is where RunClocked's clocks start: 12:00 UTC, a multiple of every
// window the suite uses since the Unix epoch.
var Noon = time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)

// A Clock is a settable clock for tests. It is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a Clock set to t.
func NewClock(t time.Time) *Clock {
	c := new(Clock)
	c.Set(t)
	return c
}

// Now returns the Clock's time. It has the signature stores take.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set sets the Clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Advance moves the Clock by d, which may be negative.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// take calls s.Take and fails the test on an error.
func take(t *testing.T, s ratelimit.Store, key string, n int64, limits ...ratelimit.Limit) ratelimit.Decision {
	t.Helper()
	d, err := s.Take(context.Background(), key, n, limits...)
	if err != nil {
		t.Fatalf("Take(%q, %d, %v) error: %v", key, n, limits, err)
	}
	return d
}

// wantRemaining checks that a peek of key under l reports remaining.
func wantRemaining(t *testing.T, s ratelimit.Store, key string, l ratelimit.Limit, remaining int64) {
	t.Helper()
	if d := take(t, s, key, 0, l); !d.Allowed || d.Remaining != remaining {
		t.Errorf("Take(%q, 0, %v) = %+v, want allowed with Remaining %d", key, l, d, remaining)
	}
}

// checkRefusal checks the fields of a refusal by a limit with window w.
func checkRefusal(t *testing.T, key string, d ratelimit.Decision, w time.Duration) {
	t.Helper()
	if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 3*w || d.Remaining < 0 || d.ResetAfter < 0 || d.ResetAfter > 3*w {
		t.Errorf("Take(%q) = %+v, want refused, 0 < RetryAfter ≤ %v, Remaining ≥ 0, 0 ≤ ResetAfter ≤ %v", key, d, 3*w, 3*w)
	}
}

// testAnswerBounds takes random bursts under random limits on the
// store's own clock and checks the bounds of what a client is told
// (Decision.ResetSeconds, RetryAfterSeconds): an admission's t is at most
// the window in whole seconds, a refusal's t is its Retry-After, at most
// the window (for SlidingWindow, the window plus n×Window/Count). Whether
// waiting Retry-After admits needs a clock the test steps: RunClocked's
// AnswerProperties.
func testAnswerBounds(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	rng := rand.New(rand.NewPCG(22, 6+uint64(a)))
	windows := []time.Duration{time.Minute, 5 * time.Minute, time.Hour}
	refusals, admissions := 0, 0
	for run := range 12 {
		l := ratelimit.Limit{Count: 1 + rng.Int64N([]int64{3, 20, 200}[rng.IntN(3)]), Window: windows[rng.IntN(len(windows))], Algorithm: a}
		key := fmt.Sprintf("%s/%d", t.Name(), run)
		for range 40 {
			n := 1 + rng.Int64N(min(l.Count, 3))
			d := take(t, s, key, n, l)
			if d.Allowed {
				admissions++
			} else {
				refusals++
			}
			checkAnswer(t, key, n, l, d)
		}
	}
	if refusals < 50 || admissions < 50 {
		t.Errorf("%d refusals, %d admissions: the random bursts cover too little", refusals, admissions)
	}
}

func testExactUnderConcurrency(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	for _, n := range []int64{1, 3} {
		key := fmt.Sprintf("%s/n=%d", t.Name(), n)
		l := long(100, a)
		const goroutines, each = 16, 20
		admitted := hammer(t, s, key, n, goroutines, each, l)
		if want := 100 / n; admitted != want {
			t.Errorf("%d goroutines × %d Take(%q, %d, %v): %d admitted, want exactly %d", goroutines, each, key, n, l, admitted, want)
		}
		wantRemaining(t, s, key, l, 100%n)
	}
}

// hammer calls Take from goroutines at once, each times times, and
// returns how many Takes were admitted.
func hammer(t *testing.T, s ratelimit.Store, key string, n int64, goroutines, times int, limits ...ratelimit.Limit) int64 {
	t.Helper()
	var (
		admitted atomic.Int64
		failed   atomic.Value
		start    = make(chan struct{})
		wg       sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			<-start
			for range times {
				d, err := s.Take(context.Background(), key, n, limits...)
				switch {
				case err != nil:
					failed.Store(err)
				case d.Allowed:
					admitted.Add(1)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("Take(%q, %d, %v) error: %v", key, n, limits, err)
	}
	return admitted.Load()
}

func testAllOrNothingUnderConcurrency(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key := t.Name()
	small, large := long(50, a), long(80, ratelimit.SlidingWindow)
	if admitted := hammer(t, s, key, 1, 16, 20, large, small); admitted != 50 {
		t.Errorf("16 goroutines × 20 Take(%q, 1, %v, %v): %d admitted, want exactly 50", key, large, small, admitted)
	}
	// The 270 refusals consumed nothing of the larger limit.
	wantRemaining(t, s, key, large, 30)
}

func testRemainingCountsDown(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(5, a)
	for want := int64(4); want >= 0; want-- {
		d := take(t, s, key, 1, l)
		if !d.Allowed || d.Remaining != want || d.RetryAfter != 0 || d.Limit != 0 || d.ResetAfter <= 0 {
			t.Errorf("Take(%q, 1, %v) = %+v, want allowed with Remaining %d, no RetryAfter, a ResetAfter", key, l, d, want)
		}
	}
	d := take(t, s, key, 1, l)
	checkRefusal(t, key, d, l.Window)
	if d.Remaining != 0 || d.Limit != 0 {
		t.Errorf("Take(%q, 1, %v) = %+v, want Remaining 0 and Limit 0", key, l, d)
	}
}

func testRefusedConsumesNothing(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(10, a)
	if d := take(t, s, key, 7, l); !d.Allowed || d.Remaining != 3 {
		t.Fatalf("Take(%q, 7, %v) = %+v, want allowed with Remaining 3", key, l, d)
	}
	d := take(t, s, key, 5, l)
	checkRefusal(t, key, d, l.Window)
	if d.Remaining != 3 {
		t.Errorf("Take(%q, 5, %v) = %+v, want Remaining 3", key, l, d)
	}
	if d := take(t, s, key, 3, l); !d.Allowed || d.Remaining != 0 {
		t.Errorf("Take(%q, 3, %v) = %+v, want allowed with Remaining 0", key, l, d)
	}
}

func testPeek(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(10, a)
	if d := take(t, s, key, 0, l); d != (ratelimit.Decision{Allowed: true, Remaining: 10}) {
		t.Errorf("Take(%q, 0, %v) on a new key = %+v, want allowed with Remaining 10 and nothing else", key, l, d)
	}
	take(t, s, key, 2, l)
	for range 3 {
		wantRemaining(t, s, key, l, 8)
	}
	take(t, s, key, 8, l)
	wantRemaining(t, s, key, l, 0) // a peek fits even when nothing else does
}

func testMoreThanCount(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(10, a)
	d := take(t, s, key, 11, l)
	checkRefusal(t, key, d, l.Window)
	if d.Remaining != 10 {
		t.Errorf("Take(%q, 11, %v) = %+v, want Remaining 10", key, l, d)
	}
	wantRemaining(t, s, key, l, 10)
	if d := take(t, s, key, 10, l); !d.Allowed {
		t.Errorf("Take(%q, 10, %v) = %+v, want allowed", key, l, d)
	}
}

func testKeysIndependent(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	l := long(3, a)
	p := t.Name()
	keys := []string{"", p, p + "\x00", p + "/a", p + "/b", p + "/" + strings.Repeat("x", 4096), p + "/\xff\xfe", strings.ToUpper(p)}
	for i, key := range keys {
		if d := take(t, s, key, 1+int64(i%3), l); !d.Allowed || d.Remaining != 2-int64(i%3) {
			t.Errorf("Take(%q, %d, %v) = %+v, want allowed with Remaining %d", key, 1+i%3, l, d, 2-i%3)
		}
	}
	for i, key := range keys {
		wantRemaining(t, s, key, l, 2-int64(i%3))
	}
}

func testLimitsIndependent(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key := t.Name()
	limits := []ratelimit.Limit{long(3, a), long(4, a), {Count: 3, Window: ratelimit.MaxWindow - time.Millisecond, Algorithm: a}}
	for _, b := range algorithms {
		if b != a {
			limits = append(limits, long(3, b))
		}
	}
	take(t, s, key, 3, limits[0])
	wantRemaining(t, s, key, limits[0], 0)
	for _, l := range limits[1:] {
		wantRemaining(t, s, key, l, l.Count)
	}
}

func testAllOrNothing(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key := t.Name()
	five, three := long(5, a), long(3, ratelimit.SlidingWindow)
	want := []ratelimit.Decision{
		{Allowed: true, Limit: 1, Remaining: 2},
		{Allowed: true, Limit: 1, Remaining: 1},
		{Allowed: true, Limit: 1, Remaining: 0},
	}
	for i, w := range want {
		d := take(t, s, key, 1, five, three)
		d.ResetAfter = 0
		if d != w {
			t.Errorf("Take %d (%q, 1, %v, %v) = %+v, want %+v", i, key, five, three, d, w)
		}
	}
	d := take(t, s, key, 1, five, three)
	checkRefusal(t, key, d, three.Window)
	if d.Limit != 1 || d.Remaining != 0 {
		t.Errorf("Take(%q, 1, %v, %v) = %+v, want refused by limit 1 with Remaining 0", key, five, three, d)
	}
	wantRemaining(t, s, key, five, 2) // the refusal consumed nothing of five
	// Refused by the first limit: the second is untouched.
	two, ten := long(2, a), long(10, ratelimit.GCRA)
	key2 := key + "/2"
	take(t, s, key2, 2, two, ten)
	d = take(t, s, key2, 1, two, ten)
	checkRefusal(t, key2, d, two.Window)
	if d.Limit != 0 {
		t.Errorf("Take(%q, 1, %v, %v) = %+v, want refused by limit 0", key2, two, ten, d)
	}
	wantRemaining(t, s, key2, ten, 8)
	// Several limits refusing: the first decides.
	d = take(t, s, key2, 11, ten, two)
	checkRefusal(t, key2, d, two.Window)
	if d.Limit != 0 {
		t.Errorf("Take(%q, 11, %v, %v) = %+v, want refused by limit 0", key2, ten, two, d)
	}
	// More limits than a store might special-case.
	key3 := key + "/3"
	many := []ratelimit.Limit{long(9, a), long(8, a), long(7, a), long(6, a), long(5, a), long(4, a), long(3, a)}
	for range 3 {
		if d := take(t, s, key3, 1, many...); !d.Allowed || d.Limit != 6 {
			t.Errorf("Take(%q, 1, %v) = %+v, want allowed, decided by limit 6", key3, many, d)
		}
	}
	if d := take(t, s, key3, 1, many...); d.Allowed || d.Limit != 6 {
		t.Errorf("Take(%q, 1, %v) = %+v, want refused by limit 6", key3, many, d)
	}
	for _, l := range many {
		wantRemaining(t, s, key3, l, l.Count-3)
	}
}

func testRepeatedLimit(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(10, a)
	if d := take(t, s, key, 2, l, l); !d.Allowed || d.Remaining != 8 {
		t.Errorf("Take(%q, 2, %v, %v) = %+v, want allowed with Remaining 8", key, l, l, d)
	}
	wantRemaining(t, s, key, l, 8)
	five := []ratelimit.Limit{l, long(20, a), l, long(30, a), l, l}
	if d := take(t, s, key, 1, five...); !d.Allowed || d.Remaining != 7 {
		t.Errorf("Take(%q, 1, %v) = %+v, want allowed with Remaining 7", key, five, d)
	}
	wantRemaining(t, s, key, l, 7)
}

// testKeyNotRetained passes keys that alias a buffer the caller then
// reuses, as Store.Take allows.
func testKeyNotRetained(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	l := long(5, a)
	buf := []byte(t.Name() + "/aaaa")
	alias := unsafe.String(&buf[0], len(buf))
	take(t, s, alias, 1, l)
	copy(buf[len(buf)-4:], "bbbb")
	take(t, s, alias, 2, l)
	wantRemaining(t, s, t.Name()+"/aaaa", l, 4)
	wantRemaining(t, s, t.Name()+"/bbbb", l, 3)
}

func testErrors(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(5, a)
	ctx := context.Background()
	if _, err := s.Take(ctx, key, 1); !errors.Is(err, ratelimit.ErrNoLimits) {
		t.Errorf("Take(%q, 1) without limits: error %v, want ErrNoLimits", key, err)
	}
	if _, err := s.Take(ctx, key, -1, l); err == nil {
		t.Errorf("Take(%q, -1, %v): no error", key, l)
	}
	bad := []ratelimit.Limit{
		{Count: 0, Window: time.Second, Algorithm: a},
		{Count: 1, Window: 0, Algorithm: a},
		{Count: 1, Window: -time.Second, Algorithm: a},
		{Count: 1, Window: ratelimit.MaxWindow + time.Millisecond, Algorithm: a},
		{Count: 1, Window: time.Second, Algorithm: 200},
	}
	for _, b := range bad {
		if _, err := s.Take(ctx, key, 1, l, b); err == nil {
			t.Errorf("Take(%q, 1, %v, %+v): no error for the invalid limit", key, l, b)
		}
	}
	wantRemaining(t, s, key, l, 5) // errors record nothing
}

func testCancelled(t *testing.T, s ratelimit.Store, a ratelimit.Algorithm) {
	key, l := t.Name(), long(5, a)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Either an error or a decision is fine; hanging is not.
		if d, err := s.Take(ctx, key, 1, l); err == nil && !d.Allowed {
			t.Errorf("Take(%q, 1, %v) with a cancelled context = %+v, want an error or a decision on an empty counter", key, l, d)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Take(%q, 1, %v) with a cancelled context has not returned after 10s", key, l)
	}
}
