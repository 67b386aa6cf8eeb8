package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// ParseURL reads what operators write; String shows it without the
// password, for logs.
func ExampleParseURL() {
	for _, u := range []string{
		"redis://:s3cret@10.0.0.5:6379/2",
		"rediss://floodgate:s3cret@redis.internal?timeout=50ms",
		"redis://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
		"redis://10.0.0.1:7000,10.0.0.2:7000/1",
	} {
		o, err := redisstore.ParseURL(u)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(o.Addrs, o.DB, o.TLS != nil, o.Timeout, o)
	}
	// Output:
	// [10.0.0.5:6379] 2 false 0s redis://:xxxxx@10.0.0.5:6379/2
	// [redis.internal:6379] 0 true 50ms rediss://floodgate:xxxxx@redis.internal:6379?timeout=50ms
	// [10.0.0.1:7000 10.0.0.2:7000 10.0.0.3:7000] 0 false 0s redis://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000
	// error: redisstore: url names 2 cluster nodes and database 1; a cluster has only database 0
}

// A gateway makes one Store at startup, whether or not Redis is up yet,
// checks it for readiness with Ping, and decides with Take; an error from
// Take means the store failed, and the caller's failure policy decides.
func Example() {
	o, err := redisstore.ParseURL("redis://127.0.0.1:6379")
	if err != nil {
		log.Fatal(err) // a configuration error
	}
	s, err := redisstore.New(o) // does not wait for Redis beyond o.Timeout
	if err != nil {
		log.Fatal(err) // invalid options only
	}
	defer s.Close()

	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		log.Println("not ready:", err)
	}
	perIP := []ratelimit.Limit{{Count: 1500, Window: 5 * time.Minute}}
	d, err := s.Take(ctx, "203.0.113.7", 1, perIP...)
	switch {
	case err != nil:
		log.Println("store failed; failing open:", err)
	case !d.Allowed:
		log.Printf("429, Retry-After %v", d.RetryAfter)
	}
	st := s.Stats()
	log.Printf("%d decisions, %d round trips, %d from the cache, %d errors", st.Takes, st.RoundTrips, st.CacheHits, st.Errors)
}
