package redisstore

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

func TestZZMemory(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	mem := func() int {
		info, _ := srv.Do("INFO", "memory")
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		return 0
	}
	before := mem()
	l := []ratelimit.Limit{{Count: 1500, Window: 5 * time.Minute}}
	const n = 200000
	for i := range n {
		s.Take(ctx, "203.0.113."+strconv.Itoa(i), 1, l...)
	}
	after := mem()
	t.Logf("%.1f bytes per counter", float64(after-before)/n)
	l2 := []ratelimit.Limit{{Count: 1500, Window: 5 * time.Minute}, {Count: 60, Window: time.Minute, Algorithm: ratelimit.GCRA}}
	before = mem()
	for i := range n {
		s.Take(ctx, "198.51.100."+strconv.Itoa(i), 1, l2...)
	}
	t.Logf("%.1f bytes per key with 2 limits", float64(mem()-before)/n)
}
