package gateway_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit"
)

// TestKeyCapEvictionMetric: with a cap of K keys, 10·K new keys leave at
// most K tracked, and floodgate_store_evictions_total counts the rest.
func TestKeyCapEvictionMetric(t *testing.T) {
	const k = 1024
	m := telemetry.NewMetrics("test")
	c := newClock()
	s := gateway.NewMemoryStore(k, c.Now, m)
	lim := ratelimit.Limit{Count: 10, Window: time.Hour}
	for i := range 10 * k {
		d, err := s.Take(context.Background(), "client-"+strconv.Itoa(i), 1, lim)
		if err != nil || !d.Allowed {
			t.Fatalf("Take(client-%d) = %+v, %v: a new key must be admitted", i, d, err)
		}
	}
	h := &harness{t: t, admin: admin.Handler(admin.Options{Gatherer: m.Registry})}
	keys := h.metric("floodgate_store_keys")
	evicted := h.metric("floodgate_store_evictions_total")
	if keys > k || keys <= 0 {
		t.Errorf("floodgate_store_keys = %v, want 1..%d", keys, k)
	}
	if keys+evicted != 10*k {
		t.Errorf("floodgate_store_keys (%v) + floodgate_store_evictions_total (%v) = %v, want %d", keys, evicted, keys+evicted, 10*k)
	}
	if got := h.metric("floodgate_store_max_keys"); got != k {
		t.Errorf("floodgate_store_max_keys = %v, want %d", got, k)
	}
}
