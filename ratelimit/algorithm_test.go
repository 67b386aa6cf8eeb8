package ratelimit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// noon is 12:00 UTC, a multiple of every window used below since the Unix
// epoch, so the worked examples' windows run 12:00–12:05, 12:05–12:10.
var noon = time.Date(2025, 6, 2, 12, 0, 0, 0, time.UTC)

// at returns the instant hh:mm:ss after noon's midnight, as Unix nanoseconds.
func at(t *testing.T, clock string) int64 {
	t.Helper()
	c, err := time.Parse("15:04:05.999999999", clock)
	if err != nil {
		t.Fatalf("bad clock %q: %v", clock, err)
	}
	day := noon.Truncate(24 * time.Hour)
	return day.Add(time.Duration(c.Hour())*time.Hour + time.Duration(c.Minute())*time.Minute +
		time.Duration(c.Second())*time.Second + time.Duration(c.Nanosecond())).UnixNano()
}

// TestTakeWorkedExample proves, step by step, the "What 100/5m admits"
// section of Limit.Take's documentation (and docs/rules.md).
func TestTakeWorkedExample(t *testing.T) {
	type burst struct {
		at          string        // instant of the Takes
		takes       int           // one-event Takes at that instant
		wantAllowed int           // how many pass (always the first ones)
		wantRetry   time.Duration // RetryAfter of the refused ones
	}
	tests := []struct {
		algo   Algorithm
		bursts []burst
	}{
		{SlidingWindow, []burst{
			{"12:04:00", 101, 100, 63 * time.Second},
			{"12:05:03", 2, 1, 3 * time.Second},
			{"12:07:30", 50, 49, 3 * time.Second},
			{"12:10:00", 51, 50, 6 * time.Second},
		}},
		{GCRA, []burst{
			{"12:04:00", 101, 100, 3 * time.Second},
			{"12:04:03", 2, 1, 3 * time.Second},
			{"12:06:33", 51, 50, 3 * time.Second},
			{"12:11:33", 101, 100, 3 * time.Second},
		}},
		{FixedWindow, []burst{
			{"12:04:00", 101, 100, 60 * time.Second},
			{"12:05:00", 101, 100, 300 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.algo.String(), func(t *testing.T) {
			l, err := ParseLimit("100/5m")
			if err != nil {
				t.Fatal(err)
			}
			l.Algorithm = tt.algo
			var s State
			for _, b := range tt.bursts {
				now := at(t, b.at)
				allowed := 0
				for i := range b.takes {
					var d Decision
					s, d = l.Take(s, now, 1)
					switch {
					case d.Allowed && i != allowed:
						t.Fatalf("%s: take %d allowed after a refusal", b.at, i)
					case d.Allowed:
						allowed++
					case d.RetryAfter != b.wantRetry:
						t.Errorf("%s: take %d: RetryAfter = %v, want %v", b.at, i, d.RetryAfter, b.wantRetry)
					}
				}
				if allowed != b.wantAllowed {
					t.Errorf("%s: %d of %d takes allowed, want %d", b.at, allowed, b.takes, b.wantAllowed)
				}
			}
		})
	}
}

// step is one Take at an instant in a table test, with the Decision expected.
type step struct {
	at   time.Duration // since t0
	n    int64
	want Decision
}

// runSteps applies steps in order to one counter under l, starting empty.
func runSteps(t *testing.T, t0 int64, l Limit, steps []step) State {
	t.Helper()
	var s State
	latest := time.Duration(-1 << 63)
	for i, st := range steps {
		before := s
		back := st.at < latest // the State may move onto the new clock
		latest = max(latest, st.at)
		var d Decision
		s, d = l.Take(s, t0+int64(st.at), st.n)
		if diff := cmp.Diff(d, st.want); diff != "" {
			t.Errorf("step %d: Take(t0+%v, %d) (-got +want):\n%s", i, st.at, st.n, diff)
		}
		if (!d.Allowed || st.n == 0) && !back && s != before {
			t.Errorf("step %d: Take(t0+%v, %d) changed the state from %+v to %+v", i, st.at, st.n, before, s)
		}
	}
	return s
}

const (
	ms  = time.Millisecond
	sec = time.Second
	day = 24 * time.Hour
)

func ok(rem int64, reset time.Duration) Decision {
	return Decision{Allowed: true, Remaining: rem, ResetAfter: reset}
}

func no(rem int64, retry, reset time.Duration) Decision {
	return Decision{Remaining: rem, RetryAfter: retry, ResetAfter: reset}
}

// stepTests step one counter through explicit instants t0+at. They also
// seed FuzzTake.
var stepTests = []struct {
	name  string
	limit Limit
	steps []step
}{
	{"sliding/peek on empty", Limit{10, sec, SlidingWindow}, []step{
		{0, 0, ok(10, 0)},
		// ResetAfter is the current window's end.
		{0, 1, ok(9, sec)},
		{0, 0, ok(9, sec)},
		{500 * ms, 0, ok(9, 500*ms)},
	}},
	{"sliding/rejected not recorded", Limit{10, sec, SlidingWindow}, []step{
		{0, 7, ok(3, sec)},
		// Not before the next window, at y into it: 7×(1s−y)/1s ≤ 10−5,
		// y = 1s − ⌊5s/7⌋.
		{0, 5, no(3, 1285714286, sec)},
		{0, 3, ok(0, sec)},
	}},
	{"sliding/boundary", Limit{4, sec, SlidingWindow}, []step{
		{999 * ms, 4, ok(0, 1*ms)},
		// 1ns later the previous 4 still weigh ⌈4×(1s−1ns)/1s⌉ = 4.
		{999*ms + 1, 1, no(0, 251*ms-1, 1*ms-1)},
		{sec, 1, no(0, 250*ms, sec)},
		{1250 * ms, 1, ok(0, 750*ms)},
		{1250 * ms, 1, no(0, 250*ms, 750*ms)},
		// Two windows after the last event the counter is empty.
		{3 * sec, 4, ok(0, sec)},
	}},
	{"sliding/n greater than count", Limit{3, sec, SlidingWindow}, []step{
		{0, 4, no(3, sec, 0)},
		{0, 1, ok(2, sec)},
		{0, 4, no(2, sec, sec)},
	}},
	// t0 is 111.5 days into a 366d window; products of counts and
	// windows need 128 bits.
	{"sliding/366d window", Limit{MaxWindowCount, 366 * day, SlidingWindow}, []step{
		{0, MaxWindowCount, ok(0, 254*day+12*time.Hour)},
		// In the next window, y = 366d − ⌊(c−1)×366d/c⌋ = 7362664ns.
		{0, 1, no(0, 254*day+12*time.Hour+7362664, 254*day+12*time.Hour)},
		{0, 0, ok(0, 254*day+12*time.Hour)},
		// A window later the previous window weighs ⌈c×254.5/366⌉.
		{366 * day, MaxWindowCount, no(1308439490, 254*day+12*time.Hour, 254*day+12*time.Hour)},
		{620*day + 12*time.Hour, MaxWindowCount, ok(0, 366*day)},
	}},
	{"sliding/clock back", Limit{4, sec, SlidingWindow}, []step{
		{1500 * ms, 4, ok(0, 500*ms)},
		// 1.2s back, within a window of the window's start: counts as
		// the start, 1s.
		{300 * ms, 1, no(0, 1950*ms, 1700*ms)},
		{300 * ms, 0, ok(0, 1700*ms)},
		// 3.2s back, more than a window: the 4 move to the window after
		// now's, −1s–0, and −1.7s counts as −1s.
		{-1700 * ms, 1, no(0, 1950*ms, 1700*ms)},
		{-1700 * ms, 0, ok(0, 1700*ms)},
		{-750 * ms, 1, no(0, sec, 750*ms)},
		{250 * ms, 1, ok(0, 750*ms)},
		// Back within the window: less time has passed, so the
		// previous window weighs ⌈4×0.9⌉ = 4 instead of 3.
		{100 * ms, 1, no(0, 400*ms, 900*ms)},
		{500 * ms, 1, ok(0, 500*ms)},
	}},
	{"gcra/burst then one per period", Limit{4, sec, GCRA}, []step{
		{0, 4, ok(0, sec)},
		{0, 1, no(0, 250*ms, sec)},
		{250 * ms, 1, ok(0, sec)},
		{250 * ms, 0, ok(0, sec)},
		{1250 * ms, 0, ok(4, 0)},
		{1250 * ms, 5, no(4, sec, 0)},
		{1250 * ms, 2, ok(2, 500*ms)},
		{1250 * ms, 3, no(2, 250*ms, 500*ms)},
	}},
	{"gcra/huge count", Limit{int64(366 * day), 366 * day, GCRA}, []step{
		{0, 1 << 40, ok(int64(366*day)-1<<40, 1<<40)},
		{0, int64(366 * day), no(int64(366*day)-1<<40, 1<<40, 1<<40)},
	}},
	{"gcra/clock back", Limit{4, sec, GCRA}, []step{
		{10 * sec, 4, ok(0, sec)},
		// An hour back: the empty bucket moves to the new clock, refills
		// in one period, not in an hour.
		{10*sec - time.Hour, 1, no(0, 250*ms, sec)},
		{10*sec - time.Hour + 250*ms, 1, ok(0, sec)},
		{10*sec - time.Hour + 750*ms, 1, ok(1, 750*ms)},
		// Back by less than a window: counts as the latest instant.
		{10*sec - time.Hour + 650*ms, 1, ok(0, 1100*ms)},
		{10*sec - time.Hour + 750*ms, 1, no(0, 250*ms, sec)},
	}},
	{"fixed/boundary", Limit{3, sec, FixedWindow}, []step{
		{999 * ms, 3, ok(0, 1*ms)},
		{999 * ms, 1, no(0, 1*ms, 1*ms)},
		{sec, 3, ok(0, sec)},
		{sec, 0, ok(0, sec)},
		{1999 * ms, 1, no(0, 1*ms, 1*ms)},
		{5 * sec, 4, no(3, sec, 0)},
	}},
	{"fixed/clock back", Limit{3, sec, FixedWindow}, []step{
		{1500 * ms, 3, ok(0, 500*ms)},
		// Back into the previous window: counts as the window 1s–2s.
		{500 * ms, 1, no(0, 1500*ms, 1500*ms)},
		// Back more than a window: the 3 move to the window after now's,
		// 0–1s.
		{-500 * ms, 1, no(0, 1500*ms, 1500*ms)},
		{999 * ms, 1, no(0, 1*ms, 1*ms)},
		{sec, 3, ok(0, sec)},
	}},
}

func TestTakeSteps(t *testing.T) {
	t0 := noon.UnixNano()
	for _, tt := range stepTests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, t0, tt.limit, tt.steps)
		})
	}
}
