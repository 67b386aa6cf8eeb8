package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

func Example() {
	// A clock that the example sets; leave Now out to use the system clock.
	now := time.Date(2025, 6, 2, 12, 4, 0, 0, time.UTC)
	store := memory.New(memory.Options{Now: func() time.Time { return now }})

	// MaveDB's bulk endpoints: 100 requests per 5 minutes per client IP.
	bulk, err := ratelimit.ParseLimit("100/5m")
	if err != nil {
		panic(err)
	}
	limits := []ratelimit.Limit{bulk} // built once: Take does not allocate
	ctx := context.Background()
	var d ratelimit.Decision
	for range 101 {
		d, err = store.Take(ctx, "198.51.100.23", 1, limits...)
		if err != nil {
			panic(err)
		}
	}
	fmt.Printf("allowed=%v remaining=%d retry after %v\n", d.Allowed, d.Remaining, d.RetryAfter)

	now = now.Add(63 * time.Second)
	d, _ = store.Take(ctx, "198.51.100.23", 1, limits...)
	fmt.Printf("at 12:05:03 allowed=%v\n", d.Allowed)
	fmt.Printf("%+v\n", store.Stats())
	// Output:
	// allowed=false remaining=0 retry after 1m3s
	// at 12:05:03 allowed=true
	// {Keys:1 MaxKeys:1048576 Evictions:0 Expired:0}
}
