package redisstore

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

// benchTimeout replaces the default 100ms timeout in benchmarks, so that
// a stall of the shared machine fails no decision (a failure would open
// the breaker and be counted as a fast decision).
const benchTimeout = 5 * time.Second

// benchParallelism is the b.SetParallelism that makes the parallel
// benchmarks run at least 32 goroutines, as a busy gateway has decisions
// in flight.
func benchParallelism() int { return max(1, (32+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)) }

// parallel runs f from 32 or more goroutines, each on its own 64 keys in
// turn, and reports decisions per second, and where the CPU time went:
// this process's CPU time per decision, and, when srv is not nil, the
// Redis server's CPU time and its time inside scripts per decision.
func parallel(b *testing.B, srv *redistest.Server, f func(ctx context.Context, key string) error) {
	b.Helper()
	var id atomic.Int64
	var serverCPU0 float64
	if srv != nil {
		srv.Do("CONFIG", "RESETSTAT")
		serverCPU0 = serverCPU(b, srv)
	}
	clientCPU0 := processCPU()
	b.SetParallelism(benchParallelism())
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		g := id.Add(1)
		keys := make([]string, 64)
		for i := range keys {
			keys[i] = "bench/" + strconv.FormatInt(g, 10) + "/" + strconv.Itoa(i)
		}
		ctx := context.Background()
		for i := 0; pb.Next(); i++ {
			if err := f(ctx, keys[i%len(keys)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(processCPU()-clientCPU0)/float64(time.Microsecond)/float64(b.N), "client-cpu-µs/decision")
	if srv != nil {
		b.ReportMetric((serverCPU(b, srv)-serverCPU0)*1e6/float64(b.N), "server-cpu-µs/decision")
		b.ReportMetric(scriptMicros(b, srv)/float64(b.N), "server-script-µs/decision")
	}
}

// processCPU returns the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU returns the CPU seconds the Redis server has used.
func serverCPU(b *testing.B, srv *redistest.Server) float64 {
	info, err := srv.Do("INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// scriptMicros returns the µs Redis spent in EVALSHA and EVAL since its
// statistics were reset.
func scriptMicros(b *testing.B, srv *redistest.Server) float64 {
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		if !strings.HasPrefix(line, "cmdstat_evalsha:") && !strings.HasPrefix(line, "cmdstat_eval:") {
			continue
		}
		for _, f := range strings.Split(line[strings.IndexByte(line, ':')+1:], ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}

// BenchmarkDecisions measures admitted decisions from one process against
// one local Redis, floodgate's store beside go-redis/redis_rate (GCRA in
// one Lua script through go-redis, the peer the spec names) in the same
// run, and logs the ratio.
func BenchmarkDecisions(b *testing.B) {
	srv := redistest.Start(b)
	rates := map[string][]float64{} // each run's decisions per second
	// record keeps the decisions per second of each run's last call: the
	// testing package calls a benchmark with b.N = 1 first, then with
	// larger b.N until it lasts -benchtime, and only that last call is
	// the run's result.
	record := func(b *testing.B, name string) {
		r := float64(b.N) / b.Elapsed().Seconds()
		if b.N == 1 || len(rates[name]) == 0 {
			rates[name] = append(rates[name], r)
		} else {
			rates[name][len(rates[name])-1] = r
		}
	}
	store := func(b *testing.B, limits ...ratelimit.Limit) {
		s := newStore(b, Options{Addrs: []string{srv.Addr()}, Timeout: benchTimeout})
		before := s.Stats()
		parallel(b, srv, func(ctx context.Context, key string) error {
			d, err := s.Take(ctx, key, 1, limits...)
			if err == nil && !d.Allowed {
				err = fmt.Errorf("Take(%q) = %+v, want allowed", key, d)
			}
			return err
		})
		after := s.Stats()
		b.ReportMetric(float64(after.RoundTrips-before.RoundTrips)/float64(after.Takes-before.Takes), "roundtrips/decision")
	}
	b.Run("store=redisstore/algorithm=gcra", func(b *testing.B) {
		store(b, ratelimit.Limit{Count: 1 << 40, Window: time.Hour, Algorithm: ratelimit.GCRA})
		record(b, "redisstore")
	})
	b.Run("store=redisstore/algorithm=sliding_window", func(b *testing.B) {
		store(b, ratelimit.Limit{Count: 1 << 31, Window: time.Hour})
	})
	b.Run("store=redisstore/limits=2", func(b *testing.B) {
		store(b, ratelimit.Limit{Count: 1 << 31, Window: time.Minute, Algorithm: ratelimit.FixedWindow},
			ratelimit.Limit{Count: 1 << 31, Window: 24 * time.Hour})
	})
	b.Run("store=redis_rate/algorithm=gcra", func(b *testing.B) {
		rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ReadTimeout: benchTimeout, WriteTimeout: benchTimeout})
		defer rdb.Close()
		lim := redis_rate.NewLimiter(rdb)
		l := redis_rate.Limit{Rate: 1 << 30, Burst: 1 << 30, Period: time.Hour}
		parallel(b, srv, func(ctx context.Context, key string) error {
			res, err := lim.Allow(ctx, key, l)
			if err == nil && res.Allowed == 0 {
				err = fmt.Errorf("Allow(%q) = %+v, want allowed", key, res)
			}
			return err
		})
		b.ReportMetric(1, "roundtrips/decision")
		record(b, "redis_rate")
	})
	// The ratio of the medians of this run's decisions per second,
	// printed as a benchmark result so that it shows without -v.
	b.Run("ratio=redisstore/redis_rate", func(b *testing.B) {
		if ours, peer := median(rates["redisstore"]), median(rates["redis_rate"]); ours > 0 && peer > 0 {
			b.ReportMetric(ours/peer, "ratio")
		}
	})
}

// median returns the median of xs, or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Sorted(slices.Values(xs))
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// BenchmarkDecisionsCluster measures admitted decisions against a local
// three-node Redis Cluster, where each Take is its own script run (no
// batching across keys on different slots). The cluster's three servers
// share the machine's cores with the client.
func BenchmarkDecisionsCluster(b *testing.B) {
	c := redistest.StartCluster(b)
	s := newStore(b, Options{Addrs: c.Addrs(), Timeout: benchTimeout})
	l := ratelimit.Limit{Count: 1 << 40, Window: time.Hour, Algorithm: ratelimit.GCRA}
	before := s.Stats()
	parallel(b, nil, func(ctx context.Context, key string) error {
		d, err := s.Take(ctx, key, 1, l)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("Take(%q) = %+v, want allowed", key, d)
		}
		return err
	})
	after := s.Stats()
	b.ReportMetric(float64(after.RoundTrips-before.RoundTrips)/float64(after.Takes-before.Takes), "roundtrips/decision")
}

// BenchmarkCachedRefusal measures refusals of keys known to be over their
// limit: answered by the over-limit cache, without round trips.
func BenchmarkCachedRefusal(b *testing.B) {
	srv := redistest.Start(b)
	s := newStore(b, Options{Addrs: []string{srv.Addr()}, Timeout: benchTimeout})
	l := ratelimit.Limit{Count: 1, Window: time.Hour, Algorithm: ratelimit.GCRA}
	for g := range 2 * benchParallelism() * runtime.GOMAXPROCS(0) { // the goroutines' ids, see parallel
		for i := range 64 {
			key := "bench/" + strconv.Itoa(g) + "/" + strconv.Itoa(i)
			s.Take(context.Background(), key, 1, l)
			s.Take(context.Background(), key, 1, l) // refused: cached
		}
	}
	before := s.Stats()
	parallel(b, srv, func(ctx context.Context, key string) error {
		d, err := s.Take(ctx, key, 1, l)
		if err == nil && d.Allowed {
			err = fmt.Errorf("Take(%q) = %+v, want refused", key, d)
		}
		return err
	})
	after := s.Stats()
	b.ReportMetric(float64(after.RoundTrips-before.RoundTrips)/float64(after.Takes-before.Takes), "roundtrips/decision")
}

// BenchmarkClient runs floodgate's take script through each client, to
// choose one: rueidis with auto-pipelining (what the store uses), rueidis
// with a connection per command, go-redis with its connection pool, and
// go-redis's experimental auto-pipeliner.
func BenchmarkClient(b *testing.B) {
	srv := redistest.Start(b)
	l := ratelimit.Limit{Count: 1 << 40, Window: time.Hour, Algorithm: ratelimit.GCRA}
	s := newStore(b, Options{Addrs: []string{srv.Addr()}})
	// prepare returns the keys and argument of a script run for one Take.
	prepare := func(key string) ([]string, string) {
		c := s.newCall(s.hash.sum(key), 1, []ratelimit.Limit{l}, false)
		return c.keys, string(appendNumbers(nil, 1)) + string(c.args)
	}
	check := func(reply string, err error) error {
		if err == nil {
			if admitted, _ := number([]byte(reply), 1); len(reply) != 8+8+24 || admitted != 1 {
				err = fmt.Errorf("script reply %q, want admitted", reply)
			}
		}
		return err
	}
	rueidisCase := func(b *testing.B, o rueidis.ClientOption) {
		o.InitAddress = []string{srv.Addr()}
		o.DisableCache = true
		c, err := rueidis.NewClient(o)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		if err := c.Do(context.Background(), c.B().ScriptLoad().Script(takeScript).Build()).Error(); err != nil {
			b.Fatal(err)
		}
		parallel(b, srv, func(ctx context.Context, key string) error {
			keys, arg := prepare(key)
			return check(c.Do(ctx, c.B().Evalsha().Sha1(takeScriptSHA).Numkeys(1).Key(keys...).Arg(arg).Build()).ToString())
		})
	}
	goredisCase := func(b *testing.B, auto bool) {
		rdb := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ReadTimeout: benchTimeout, WriteTimeout: benchTimeout})
		defer rdb.Close()
		var cmd goredis.Cmdable = rdb
		if auto {
			ap, err := rdb.AutoPipeline()
			if err != nil {
				b.Fatal(err)
			}
			defer ap.Close()
			cmd = ap
		}
		if err := rdb.ScriptLoad(context.Background(), takeScript).Err(); err != nil {
			b.Fatal(err)
		}
		parallel(b, srv, func(ctx context.Context, key string) error {
			keys, arg := prepare(key)
			return check(cmd.EvalSha(ctx, takeScriptSHA, keys, arg).Text())
		})
	}
	b.Run("client=rueidis/pipelining=auto", func(b *testing.B) { rueidisCase(b, rueidis.ClientOption{}) })
	b.Run("client=rueidis/pipelining=auto/flushdelay=20µs", func(b *testing.B) {
		rueidisCase(b, rueidis.ClientOption{MaxFlushDelay: 20 * time.Microsecond})
	})
	b.Run("client=rueidis/pipelining=auto/flushdelay=100µs", func(b *testing.B) {
		rueidisCase(b, rueidis.ClientOption{MaxFlushDelay: 100 * time.Microsecond})
	})
	b.Run("client=rueidis/pipelining=auto/conns=1", func(b *testing.B) {
		rueidisCase(b, rueidis.ClientOption{PipelineMultiplex: -1})
	})
	b.Run("client=rueidis/pipelining=off", func(b *testing.B) { rueidisCase(b, rueidis.ClientOption{DisableAutoPipelining: true}) })
	b.Run("client=go-redis/pipelining=off", func(b *testing.B) { goredisCase(b, false) })
	b.Run("client=go-redis/pipelining=auto", func(b *testing.B) { goredisCase(b, true) })
}

// BenchmarkKeyHash measures what hashing a caller's key costs.
func BenchmarkKeyHash(b *testing.B) {
	for _, secret := range []string{"", "s3cret"} {
		h := newHasher([]byte(secret))
		b.Run("secret="+strconv.FormatBool(secret != ""), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.sum("203.0.113.7/route")
			}
		})
	}
}

// BenchmarkKeySlot measures finding the hash slot of a key's counters,
// which a Take on a cluster does to choose its fail-fast state.
func BenchmarkKeySlot(b *testing.B) {
	h := newHasher(nil).sum("203.0.113.7/route")
	b.ReportAllocs()
	for b.Loop() {
		keySlot(h)
	}
}
