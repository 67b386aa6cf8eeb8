package gateway

import (
	"time"

	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit/memory"
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
