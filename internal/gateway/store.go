package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// NewMemoryStore returns the in-memory store for a configuration's
// store.max_keys, with its key table exported in m. now is nil in
// production (the store's own clock: wall time at start plus Go's
// monotonic clock) and a test's clock in tests.
func NewMemoryStore(maxKeys int, now func() time.Time, m *telemetry.Metrics) *memory.Store {
	s := memory.New(memory.Options{MaxKeys: maxKeys, Now: now})
	m.RegisterStore(func() telemetry.StoreStats {
		st := s.Stats()
		return telemetry.StoreStats{Keys: int64(st.Keys), MaxKeys: int64(st.MaxKeys), Evictions: st.Evictions, Expired: st.Expired}
	})
	return s
}

// StoreTimeout returns the longest one decision by the Redis store that
// c names may wait, as NewStore sets it: what start-up logs, rather than
// store.timeout, which a URL's ?timeout= may replace. It is 0 for the
// memory store or a URL that does not parse.
func StoreTimeout(c *config.Store) time.Duration {
	if c.URL == "" || c.URL == config.StoreMemory {
		return 0
	}
	o, err := redisstore.ParseURL(c.URL)
	if err != nil {
		return 0
	}
	return storeTimeout(c, o.Timeout)
}

// storeTimeout returns the Redis store's timeout for c and the URL's
// ?timeout= (0: none): store.timeout wins, unless it is only the default
// and the URL sets one.
func storeTimeout(c *config.Store, url time.Duration) time.Duration {
	if d, err := config.ParseTimeout(c.Timeout); err == nil && (c.Timeout != config.DefaultStoreTimeout || url == 0) {
		return d
	}
	if url == 0 {
		return redisstore.DefaultTimeout
	}
	return url
}

// NewStore returns the store a configuration's store section names (url
// "memory" or a Redis URL), with its metrics registered in m. A Redis
// store is returned even when Redis is down: it connects in the
// background, its decisions fail fast until it is up (the rules' failure
// policy decides), and it recovers by itself. The io.Closer closes it.
func NewStore(c *config.Store, m *telemetry.Metrics, logger *slog.Logger) (ratelimit.Store, io.Closer, error) {
	if c.URL == "" || c.URL == config.StoreMemory {
		return NewMemoryStore(c.MaxKeys, nil, m), io.NopCloser(nil), nil
	}
	o, err := redisstore.ParseURL(c.URL)
	if err != nil {
		return nil, nil, err
	}
	o.Timeout = storeTimeout(c, o.Timeout)
	o.Logger = logger
	s, err := redisstore.New(o)
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	stat := func(f func(redisstore.Stats) float64) func() float64 {
		return func() float64 { return f(s.Stats()) }
	}
	m.Registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "floodgate_redis_decisions_total",
			Help: "Decisions asked of the Redis store.",
		}, stat(func(st redisstore.Stats) float64 { return float64(st.Takes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "floodgate_redis_round_trips_total",
			Help: "Scripts sent to Redis; divided by decisions, the round trips per decision.",
		}, stat(func(st redisstore.Stats) float64 { return float64(st.RoundTrips) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "floodgate_redis_cache_hits_total",
			Help: "Decisions refused by the over-limit cache without a round trip.",
		}, stat(func(st redisstore.Stats) float64 { return float64(st.CacheHits) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "floodgate_redis_up",
			Help: "1 while decisions are sent to Redis (connected, and answering since it last did not), else 0.",
		}, stat(func(st redisstore.Stats) float64 {
			if st.Up {
				return 1
			}
			return 0
		})),
	)
	return s, s, nil
}
