package ratelimit_test

import (
	"fmt"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// Limit.Take is the algorithm for one counter: stores keep the State, the
// replayer drives the instant from log timestamps.
func ExampleLimit_Take() {
	l, err := ratelimit.ParseLimit("3/1m") // sliding window by default
	if err != nil {
		panic(err)
	}
	var s ratelimit.State // empty
	now := time.Date(2025, 6, 2, 12, 0, 30, 0, time.UTC)
	for range 4 {
		var d ratelimit.Decision
		s, d = l.Take(s, now.UnixNano(), 1)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	// At 12:01:50 the 3 of 12:00–12:01 weigh 3×10/60 = 0.5: one more fits.
	_, d := l.Take(s, now.Add(80*time.Second).UnixNano(), 1)
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 50s
	// true 1
}
