package gateway

import (
	"testing"
	"time"
)

// TestClockInjected: with Options.Now set, every reading and duration
// comes from it (the tests' fake clocks rely on that).
func TestClockInjected(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	c := clock{now: func() time.Time { return at }}
	start := c.Now()
	at = at.Add(1500 * time.Millisecond)
	if got := c.Since(start); got != 1500*time.Millisecond {
		t.Fatalf("Since = %v, want 1.5s", got)
	}
	if !c.Now().Equal(at) {
		t.Fatalf("Now = %v, want %v", c.Now(), at)
	}
}

// TestClockSystem: without one, durations are the system clock's and
// never negative.
func TestClockSystem(t *testing.T) {
	var c clock
	start := c.Now()
	if d := c.Since(start); d < 0 {
		t.Fatalf("Since = %v", d)
	}
	if start.Sub(time.Now()) > 0 {
		t.Fatal("Now is ahead of time.Now")
	}
}

// BenchmarkClock times the three readings a forwarded request makes (when
// it goes to the upstream, when the response's header comes, when the
// upstream is done): on the system clock, and through an injected
// time.Now, which is what every request paid before durations were read
// on the monotonic clock alone.
func BenchmarkClock(b *testing.B) {
	for _, c := range []struct {
		name  string
		clock clock
	}{{"system", clock{}}, {"injected", clock{now: time.Now}}} {
		b.Run("clock="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			for b.Loop() {
				start := c.clock.Now()
				header := c.clock.Since(start)
				total += c.clock.Since(start) + header
			}
			if total < 0 {
				b.Fatal("a duration below zero")
			}
		})
	}
}
