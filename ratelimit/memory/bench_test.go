package memory_test

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/time/rate"

	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/storetest"
)

// The benchmarks put floodgate's memory store (memory) beside the peer
// the spec compares it with (xrate): golang.org/x/time/rate limiters in a
// sync.Mutex-guarded map[string]*rate.Limiter, the usual way to key them.
// Both read the system clock on every decision. Compare within one run:
// the ratio is the result.

// open is a limit that a hot key never exhausts during a benchmark.
var (
	open     = ratelimit.Limit{Count: 1 << 30, Window: time.Second}
	openRate = func() *rate.Limiter { return rate.NewLimiter(1<<30, 1<<30) }
	// tight is 100/1m: a hot key is refused after its first 100 events.
	tight     = ratelimit.Limit{Count: 100, Window: time.Minute}
	tightRate = func() *rate.Limiter { return rate.NewLimiter(rate.Every(600*time.Millisecond), 100) }
)

// TestBenchmarkLimits checks that the benchmarks' limits are valid, since
// the benchmarks do not look at Take's errors.
func TestBenchmarkLimits(t *testing.T) {
	for _, l := range []ratelimit.Limit{open, tight, gcraOpen, sustained} {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
}

var (
	gcraOpen  = ratelimit.Limit{Count: 1 << 29, Window: time.Second, Algorithm: ratelimit.GCRA}
	sustained = ratelimit.Limit{Count: 1 << 40, Window: 24 * time.Hour, Algorithm: ratelimit.GCRA}
)

// rateMap is the peer: x/time/rate limiters by key.
type rateMap struct {
	mu     sync.Mutex
	m      map[string]*rate.Limiter
	newLim func() *rate.Limiter
}

func newRateMap(newLim func() *rate.Limiter) *rateMap {
	return &rateMap{m: make(map[string]*rate.Limiter), newLim: newLim}
}

func (r *rateMap) allow(key string) bool {
	r.mu.Lock()
	l, ok := r.m[key]
	if !ok {
		l = r.newLim()
		r.m[key] = l
	}
	r.mu.Unlock()
	return l.Allow()
}

// BenchmarkTake is one hot key, one goroutine.
func BenchmarkTake(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, "203.0.113.7", 1, open)
		}
	})
	b.Run("store=xrate", func(b *testing.B) {
		r := newRateMap(openRate)
		b.ReportAllocs()
		for b.Loop() {
			r.allow("203.0.113.7")
		}
	})
	b.Run("store=memory/refused", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, "203.0.113.7", 1, tight)
		}
	})
	b.Run("store=xrate/refused", func(b *testing.B) {
		r := newRateMap(tightRate)
		b.ReportAllocs()
		for b.Loop() {
			r.allow("203.0.113.7")
		}
	})
	// Two limits (burst and sustained) under one lock.
	b.Run("store=memory/limits=2", func(b *testing.B) {
		s := memory.New(memory.Options{})
		limits := []ratelimit.Limit{open, sustained}
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, "203.0.113.7", 1, limits...)
		}
	})
	b.Run("store=memory/algorithm=gcra", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, "203.0.113.7", 1, gcraOpen)
		}
	})
	// With the wall clock (time.Now) as Options.Now instead of the
	// default monotonic reading.
	b.Run("store=memory/clock=time.Now", func(b *testing.B) {
		s := memory.New(memory.Options{Now: time.Now})
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, "203.0.113.7", 1, open)
		}
	})
}

// BenchmarkClock is the clock reads alone, for scale.
func BenchmarkClock(b *testing.B) {
	b.Run("time.Now", func(b *testing.B) {
		for b.Loop() {
			_ = time.Now().UnixNano()
		}
	})
	start := time.Now()
	b.Run("time.Since", func(b *testing.B) {
		for b.Loop() {
			_ = time.Since(start)
		}
	})
}

// BenchmarkTakeParallel takes from every core at once: one hot key (one
// lock), and one key per goroutine (spread over shards).
func BenchmarkTakeParallel(b *testing.B) {
	b.Run("store=memory/keys=1", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				s.Take(ctx, "203.0.113.7", 1, open)
			}
		})
	})
	b.Run("store=xrate/keys=1", func(b *testing.B) {
		r := newRateMap(openRate)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				r.allow("203.0.113.7")
			}
		})
	})
	var g atomic.Int64
	b.Run("store=memory/keys=per-goroutine", func(b *testing.B) {
		s := memory.New(memory.Options{})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := "client" + strconv.FormatInt(g.Add(1), 10)
			for pb.Next() {
				s.Take(ctx, key, 1, open)
			}
		})
	})
	b.Run("store=xrate/keys=per-goroutine", func(b *testing.B) {
		r := newRateMap(openRate)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := "client" + strconv.FormatInt(g.Add(1), 10)
			for pb.Next() {
				r.allow(key)
			}
		})
	})
}

// manyKeys are 65536 distinct client keys, made once.
var manyKeys = func() []string {
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "198.51." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255)
	}
	return keys
}()

// BenchmarkTakeManyKeys cycles through 65536 keys, so the counters are
// not in the CPU caches.
func BenchmarkTakeManyKeys(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) {
		s := memory.New(memory.Options{})
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, manyKeys[i&(1<<16-1)], 1, tight)
			i++
		}
	})
	b.Run("store=xrate", func(b *testing.B) {
		r := newRateMap(tightRate)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			r.allow(manyKeys[i&(1<<16-1)])
			i++
		}
	})
	b.Run("store=memory/parallel", func(b *testing.B) {
		s := memory.New(memory.Options{})
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1 << 12))
			for pb.Next() {
				s.Take(ctx, manyKeys[i&(1<<16-1)], 1, tight)
				i++
			}
		})
	})
	b.Run("store=xrate/parallel", func(b *testing.B) {
		r := newRateMap(tightRate)
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1 << 12))
			for pb.Next() {
				r.allow(manyKeys[i&(1<<16-1)])
				i++
			}
		})
	})
}

// BenchmarkTakeNewKeys is a flood: every Take is from a key never seen
// before. The memory store is full (MaxKeys 65536), so each new key
// evicts one; the peer's map grows without bound.
func BenchmarkTakeNewKeys(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) {
		var g keyGen
		s := memory.New(memory.Options{MaxKeys: 1 << 16})
		for i := range 1 << 16 {
			s.Take(ctx, g.key(-1-i), 1, tight)
		}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			s.Take(ctx, g.key(i), 1, tight)
			i++
		}
	})
	b.Run("store=xrate", func(b *testing.B) {
		var g keyGen
		r := newRateMap(tightRate)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			r.allow(strings.Clone(g.key(i))) // the map keeps it
			i++
		}
	})
}

// keyGen makes distinct keys in one reused buffer, so that making them
// allocates nothing: the store does not retain keys.
type keyGen struct{ buf []byte }

func (g *keyGen) key(i int) string {
	g.buf = strconv.AppendInt(append(g.buf[:0], "client:"...), int64(i), 10)
	return unsafe.String(&g.buf[0], len(g.buf))
}

// BenchmarkMemoryPerKey reports the heap that 1M tracked keys take, per
// key, against the peer's map of limiters (whose keys must be copied, as a
// server's request strings are not kept).
func BenchmarkMemoryPerKey(b *testing.B) {
	const keys = 1_000_000
	b.Run("store=memory", func(b *testing.B) {
		for b.Loop() {
			var g keyGen
			before := heap()
			s := memory.New(memory.Options{})
			for i := range keys {
				s.Take(ctx, g.key(i), 1, tight)
			}
			used := heap() - before
			st := s.Stats()
			if st.Keys != keys {
				b.Fatalf("Stats() = %+v, want %d keys", st, keys)
			}
			b.ReportMetric(float64(used)/float64(st.Keys), "B/key")
			runtime.KeepAlive(s)
		}
	})
	b.Run("store=xrate", func(b *testing.B) {
		for b.Loop() {
			var g keyGen
			before := heap()
			r := newRateMap(tightRate)
			for i := range keys {
				r.allow(strings.Clone(g.key(i))) // the map keeps it
			}
			used := heap() - before
			b.ReportMetric(float64(used)/keys, "B/key")
			runtime.KeepAlive(r)
		}
	})
}

// BenchmarkFlood inserts 10M new keys into a store bounded to 1M counters
// and reports the largest heap seen (sampled every 250k keys) per bounded
// key, and the heap at the end.
func BenchmarkFlood(b *testing.B) {
	const maxKeys, flood = 1 << 20, 10_000_000
	for b.Loop() {
		var g keyGen
		clock := storetest.NewClock(storetest.Noon)
		before := heap()
		s := memory.New(memory.Options{Now: clock.Now, MaxKeys: maxKeys})
		var peak int64
		for i := range flood {
			clock.Advance(time.Microsecond)
			s.Take(ctx, g.key(i), 1, tight)
			if i%250_000 == 0 {
				peak = max(peak, heap()-before)
			}
		}
		end := heap() - before
		peak = max(peak, end)
		st := s.Stats()
		if st.Keys > maxKeys {
			b.Fatalf("Stats() = %+v: more than %d keys", st, maxKeys)
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		b.ReportMetric(float64(end)/(1<<20), "end-MiB")
		b.ReportMetric(float64(peak)/maxKeys, "peak-B/key")
		b.ReportMetric(float64(st.Evictions), "evictions")
		runtime.KeepAlive(s)
	}
}
