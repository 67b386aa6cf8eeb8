package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/testnet"
	"github.com/floodgate/floodgate/ratelimit"
)

// failTimeout is the Options.Timeout of the failure tests' stores: long
// enough for a loaded machine with the race detector, short enough to
// wait out a few times.
const failTimeout = 500 * time.Millisecond

// bound is how long any Take may take in these tests: the timeout plus a
// generous allowance for a loaded machine. Tests check that Takes return,
// not how fast.
const bound = failTimeout + 5*time.Second

// timedTake calls s.Take and fails the test if it does not return within
// bound.
func timedTake(t *testing.T, s *Store, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	t.Helper()
	start := time.Now()
	d, err := s.Take(ctx, key, n, limits...)
	if el := time.Since(start); el > bound {
		t.Errorf("Take(%q) returned after %v, want within %v", key, el, bound)
	}
	return d, err
}

// waitTake retries a Take until it succeeds, for at most a generous
// deadline, and returns its Decision.
func waitTake(t *testing.T, s *Store, key string, n int64, limits ...ratelimit.Limit) ratelimit.Decision {
	t.Helper()
	deadline := time.Now().Add(redistest.ReadyTimeout)
	for {
		d, err := timedTake(t, s, key, n, limits...)
		if err == nil {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("Take(%q) still failing after %v: %v", key, redistest.ReadyTimeout, err)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not an assertion
	}
}

var minute = ratelimit.Limit{Count: 5, Window: time.Minute}

// TestNewWhileRedisDown checks that New neither fails nor blocks when Redis
// is down, that Takes fail at once meanwhile, and that the store connects
// by itself once Redis is up.
func TestNewWhileRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Kill()
	start := time.Now()
	s, err := New(Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	if err != nil {
		t.Fatalf("New with Redis down: %v", err)
	}
	defer s.Close()
	if el := time.Since(start); el > bound {
		t.Errorf("New with Redis down took %v, want within %v", el, bound)
	}
	_, err = timedTake(t, s, "k", 1, minute)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("Take with Redis down: error %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping with Redis down: error %v, want ErrUnavailable", err)
	}
	if st := s.Stats(); st.Connected || st.Up || st.FastFails != 1 || st.Errors != 1 {
		t.Errorf("Stats() = %+v, want not connected, 1 error, 1 fast failure", st)
	}

	srv.Restart()
	if d := waitTake(t, s, "k", 1, minute); !d.Allowed || d.Remaining != 4 {
		t.Errorf("Take once Redis is up = %+v, want allowed with Remaining 4", d)
	}
	if st := s.Stats(); !st.Connected || !st.Up {
		t.Errorf("Stats() = %+v, want connected and up", st)
	}
}

// TestNewUnreachableAddress checks that New returns within its bound even
// when the address does not answer at all.
func TestNewUnreachableAddress(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// 192.0.2.0/24 is TEST-NET-1: packets go nowhere (or are refused at once).
	s, err := New(Options{Addrs: []string{"192.0.2.1:6379"}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if el := time.Since(start); el > bound {
		t.Errorf("New took %v, want within %v", el, bound)
	}
	if _, err := timedTake(t, s, "k", 1, minute); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Take: error %v, want ErrUnavailable", err)
	}
	s.Close()
}

// TestKillAndRestart kills Redis under load: every Take still returns
// (with an error), errors are counted, the store then fails fast, and
// once Redis is restarted the same Store decides again, with the cache of
// refusals from before dropped (Redis lost them).
func TestKillAndRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	one := ratelimit.Limit{Count: 1, Window: time.Hour}
	take(t, s, "refused", 1, one)
	if d := take(t, s, "refused", 1, one); d.Allowed || s.Stats().CacheEntries != 1 {
		t.Fatalf("Take = %+v, CacheEntries %d, want refused and cached", d, s.Stats().CacheEntries)
	}

	var (
		stop            atomic.Bool
		ok, failed      atomic.Int64
		wg              sync.WaitGroup
		lastErr         atomic.Value
		huge            = ratelimit.Limit{Count: 1 << 30, Window: time.Hour}
		load            = 8
		beforeKillStats = s.Stats()
	)
	for range load {
		wg.Go(func() {
			for !stop.Load() {
				if _, err := timedTake(t, s, "load", 1, huge); err != nil {
					failed.Add(1)
					lastErr.Store(err)
				} else {
					ok.Add(1)
				}
			}
		})
	}
	waitFor(t, "Takes under load", func() bool { return ok.Load() > 100 })
	srv.Kill()
	waitFor(t, "failures after the kill", func() bool { return s.Stats().FastFails > beforeKillStats.FastFails+100 })
	st := s.Stats()
	if st.Up || st.Errors < st.FastFails || int64(st.Errors-beforeKillStats.Errors) > failed.Load()+int64(load) {
		t.Errorf("Stats() with Redis killed = %+v, want down, errors counted", st)
	}
	t.Logf("with Redis killed: %d errors, %d of them fast; last: %v", st.Errors, st.FastFails, lastErr.Load())
	if err := s.Ping(ctx); err == nil {
		t.Errorf("Ping with Redis killed: no error")
	}

	srv.Restart()
	okBefore := ok.Load()
	waitFor(t, "Takes after the restart", func() bool { return ok.Load() > okBefore+100 })
	stop.Store(true)
	wg.Wait()
	if st := s.Stats(); !st.Up {
		t.Errorf("Stats() after the restart = %+v, want up", st)
	}
	// Redis lost its counters; so did the cache.
	if d := take(t, s, "refused", 1, one); !d.Allowed {
		t.Errorf("Take of a key refused before Redis lost its data = %+v, want allowed", d)
	}
	// Limits apply again.
	for i := range 6 {
		if d := take(t, s, "after", 1, minute); d.Allowed != (i < 5) {
			t.Errorf("Take %d after the restart = %+v, want allowed only for the first 5", i, d)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the restart: %v", err)
	}
}

// TestPausedRedis makes Redis hang (SIGSTOP): Takes time out after
// Options.Timeout instead of hanging, then fail fast, and the store
// recovers when Redis continues, without losing counters.
func TestPausedRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	take(t, s, "k", 2, minute)

	srv.Pause()
	_, err := timedTake(t, s, "k", 1, minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Take with Redis hung: error %v, want a deadline exceeded", err)
	}
	_, err = timedTake(t, s, "k", 1, minute)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("next Take with Redis hung: error %v, want ErrUnavailable (fail fast)", err)
	}
	if st := s.Stats(); st.Up || st.FastFails == 0 {
		t.Errorf("Stats() with Redis hung = %+v, want down with fast failures", st)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	if err := s.Ping(ctx); err == nil {
		t.Errorf("Ping with Redis hung: no error")
	}
	cancel()

	srv.Resume()
	// The counters were kept: 2 taken before, 1 now, and the Take that
	// timed out may or may not have been recorded (Redis runs it when it
	// continues if it was sent before the deadline).
	if d := waitTake(t, s, "k", 1, minute); !d.Allowed || d.Remaining < 1 || d.Remaining > 2 {
		t.Errorf("Take after Redis continued = %+v, want allowed with Remaining 1 or 2 (counters kept)", d)
	}
}

// TestCallerCancelDoesNotTrip checks that a Take whose own context ends
// does not make the next Takes fail fast: the caller gave up, Redis did not.
func TestCallerCancelDoesNotTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Take(cctx, "k", 1, minute); err == nil {
		t.Errorf("Take with a cancelled context: no error")
	}
	if d, err := s.Take(ctx, "k", 1, minute); err != nil || !d.Allowed {
		t.Errorf("next Take = %+v, %v, want allowed", d, err)
	}
}

// waitFor polls cond until it holds, for at most a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(redistest.ReadyTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, redistest.ReadyTimeout)
		}
		time.Sleep(5 * time.Millisecond) // a poll interval, not an assertion
	}
}

// TestNodeFailureStaysOnItsSlots kills one node of a three-node cluster:
// the keys whose slots live nodes own go on being decided by Redis, while
// the dead node's keys fail. Before it, the store's hash slots are checked
// against Redis's own (CLUSTER KEYSLOT).
func TestNodeFailureStaysOnItsSlots(t *testing.T) {
	t.Parallel()
	// The live nodes keep answering for their slots however long the
	// test takes after the kill (by default the cluster refuses every
	// command once it declares the node failed).
	c := redistest.StartCluster(t, "--cluster-require-full-coverage", "no")
	s := newStore(t, Options{Addrs: c.Addrs(), Timeout: failTimeout})
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = "client-" + strconv.Itoa(i)
		h := s.hash.sum(keys[i])
		var tagBuf [24]byte
		redisKey := counterKey(s.prefix, appendTag(tagBuf[:0], h), minute)
		got, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", redisKey)
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(keySlot(h)); got != want {
			t.Fatalf("CLUSTER KEYSLOT %s = %s, keySlot says %s", redisKey, got, want)
		}
	}

	// The slots of the node to kill, from its line in CLUSTER NODES.
	dead := c.Nodes[0]
	nodes, err := dead.Do("CLUSTER", "NODES")
	if err != nil {
		t.Fatal(err)
	}
	var deadSlots [hashSlots]bool
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "myself") {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				t.Fatalf("slot range %q in %q", r, line)
			}
			for slot := a; slot <= b; slot++ {
				deadSlots[slot] = true
			}
		}
	}
	// A key's fate: on the dead node, or in a group of slots that the
	// live nodes own whole. A group straddling the dead node's range
	// edge may fail fast for a live node's key too: not checked.
	var onDead, onLive []string
	for _, k := range keys {
		slot := keySlot(s.hash.sum(k))
		group, anyDead := slot/slotGroup*slotGroup, false
		for i := group; i < group+slotGroup; i++ {
			anyDead = anyDead || deadSlots[i]
		}
		switch {
		case deadSlots[slot]:
			onDead = append(onDead, k)
		case !anyDead:
			onLive = append(onLive, k)
		}
	}
	if len(onDead) < 50 || len(onLive) < 100 {
		t.Fatalf("%d keys on the node to kill and %d on the others' whole groups, of %d", len(onDead), len(onLive), len(keys))
	}
	for _, k := range keys {
		waitTake(t, s, k, 1, minute)
	}

	dead.Kill()
	failed := 0
	for range 3 {
		for i := range max(len(onDead), len(onLive)) {
			if i < len(onDead) {
				if _, err := timedTake(t, s, onDead[i], 1, minute); err != nil {
					failed++
				}
			}
			if i < len(onLive) {
				if _, err := timedTake(t, s, onLive[i], 1, minute); err != nil {
					t.Fatalf("Take(%q), a live node's key, after another node died: %v", onLive[i], err)
				}
			}
		}
	}
	if failed != 3*len(onDead) {
		t.Errorf("%d of %d Takes of the dead node's keys failed, want all", failed, 3*len(onDead))
	}
	if s.Stats().Up {
		t.Error("Stats().Up with a node down")
	}
}

// TestUpAgainWithoutTakes: after an outage, the store reports itself up
// once Redis answers again, even if no Take comes to probe it (a slot
// group of a cluster whose clients do not come back would otherwise keep
// Stats.Up, and the floodgate_redis_up metric, false for good).
func TestUpAgainWithoutTakes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	waitTake(t, s, "k", 1, minute)
	srv.Kill()
	waitFor(t, "failed Take", func() bool {
		_, err := timedTake(t, s, "k", 1, minute)
		return err != nil
	})
	if s.Stats().Up {
		t.Fatal("Stats().Up with Redis down")
	}
	srv.Restart()
	waitFor(t, "Stats().Up with Redis back and no Take", func() bool { return s.Stats().Up })
}

// TestNoFailureAfterRecovery: once Redis, restarted after the store saw
// it fail, is back and the store says so (a Ping answered), no decision
// fails on a connection that died with the old server: a fail_closed rule
// would answer 503 to it.
func TestNoFailureAfterRecovery(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	huge := ratelimit.Limit{Count: 1 << 30, Window: time.Hour}
	// Connections in use, as under traffic: the client's and the senders'.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				timedTake(t, s, "warm"+strconv.Itoa(i*100+j), 1, huge)
			}
		})
	}
	wg.Wait()
	srv.Kill()
	waitFor(t, "a failed Take", func() bool {
		_, err := timedTake(t, s, "k", 1, huge)
		return err != nil
	})
	srv.Restart()
	waitFor(t, "a Ping answered", func() bool { return s.Ping(ctx) == nil })
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if _, err := timedTake(t, s, "after"+strconv.Itoa(i*100+j), 1, huge); err != nil {
					t.Errorf("Take after the store said Redis answers again: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDownByPingAlone: a store that decides nothing (an idle replica)
// learns of an outage from a Ping its readiness check sends: Stats.Up and
// Up are false until Redis answers again, and the log says both.
func TestDownByPingAlone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var log testnet.Buffer
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	waitTake(t, s, "k", 1, minute)
	srv.Kill()
	if err := s.Ping(ctx); err == nil {
		t.Fatal("Ping with Redis killed: no error")
	}
	if s.Stats().Up || s.Up() {
		t.Errorf("Stats().Up %v, Up() %v after an unanswered Ping, want false", s.Stats().Up, s.Up())
	}
	srv.Restart()
	waitFor(t, "a Ping answered", func() bool { return s.Ping(ctx) == nil })
	if !s.Stats().Up || !s.Up() {
		t.Errorf("Stats().Up %v, Up() %v after Redis answered, want true", s.Stats().Up, s.Up())
	}
	for _, want := range []string{`"msg":"redis store not answering a ping"`, `"msg":"redis store reachable again"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, log.String())
		}
	}
}

// TestOpenBreakersCounted runs the order of events that a probe can meet:
// the breaker opens, a probe starts, an earlier Take succeeds and closes
// it, then the probe fails and opens it again. The store must count it
// open (Stats.Up false), and closed after the next success.
func TestOpenBreakersCounted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout})
	waitTake(t, s, "k", 1, minute)
	b, err := &s.breakers[0], errors.New("test: no answer")
	s.failed(b, err, false)
	fu := b.failUntil.Load()
	b.failUntil.CompareAndSwap(fu, fu+1) // the probe starts (see Take)
	s.recovered(b)                       // an earlier Take succeeds
	s.failed(b, err, true)               // the probe fails
	if got := s.open.Load(); got != 1 || s.Stats().Up {
		t.Fatalf("after the probe failed: %d breakers counted open, Stats().Up %v; want 1 and false", got, s.Stats().Up)
	}
	s.recovered(b)
	if got := s.open.Load(); got != 0 || !s.Stats().Up {
		t.Errorf("after a success: %d breakers counted open, Stats().Up %v; want 0 and true", got, s.Stats().Up)
	}
}

// TestErrorRepliesDoNotFailFast: a server that answers with an error (here
// out of memory under maxmemory-policy noeviction) fails those Takes, but
// is not taken for unreachable: the next Takes still go to Redis (no fast
// failures, Stats.Up stays true, no "unreachable" line), and the first
// one after Redis accepts writes again succeeds.
func TestErrorRepliesDoNotFailFast(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var log testnet.Buffer
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: failTimeout,
		Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	waitTake(t, s, "k", 1, minute)
	before := s.Stats()
	for _, cmd := range [][]string{{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "1"}} {
		if _, err := srv.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	for i := range 3 {
		_, err := timedTake(t, s, "k", 1, minute)
		if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
			t.Fatalf("Take %d on a full Redis: error %v, want Redis's OOM reply", i, err)
		}
	}
	if st := s.Stats(); !st.Up || st.FastFails != before.FastFails || st.Errors != before.Errors+3 {
		t.Errorf("Stats() = %+v after error replies (before: %+v), want up, 3 more errors, no more fast failures", st, before)
	}
	if strings.Contains(log.String(), "unreachable") {
		t.Errorf("the log says unreachable after error replies:\n%s", log.String())
	}
	if _, err := srv.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	if _, err := timedTake(t, s, "k", 1, minute); err != nil {
		t.Errorf("Take once Redis accepts writes again: %v", err)
	}
}

// TestRefusedPasswordFailsFast: a password the server refuses (changed
// on the server, the connections dropped) is an error reply too, but one
// to every connection's handshake: the store fails fast and says it is
// down rather than dialling again for each Take.
func TestRefusedPasswordFailsFast(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", "first")
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Password: "first", Timeout: failTimeout})
	waitTake(t, s, "k", 1, minute)
	redistest.DoAll(srv.Addr(), []string{"AUTH", "first"}, []string{"CONFIG", "SET", "requirepass", "second"},
		[]string{"CLIENT", "KILL", "TYPE", "normal"})
	waitFor(t, "a Take refused with WRONGPASS", func() bool {
		_, err := timedTake(t, s, "k", 1, minute)
		return err != nil && !errors.Is(err, ErrUnavailable) && strings.Contains(err.Error(), "WRONGPASS")
	})
	if s.Stats().Up {
		t.Error("Stats().Up after the password was refused, want false (failing fast)")
	}
}

// TestDroppedConnections: Redis drops every connection and keeps running
// (CLIENT KILL here; a restart between two decisions, or a proxy in
// between going away, does the same). One decision fails, on the first
// dead connection; the probe after it goes to new connections, not to the
// other dead ones, each of which would fail a probe and double the time
// every decision fails fast.
func TestDroppedConnections(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, Timeout: 5 * time.Second})
	huge := ratelimit.Limit{Count: 1 << 30, Window: time.Hour}
	// Concurrent Takes, so that each sender has a connection of its own
	// besides the client's.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if _, err := s.Take(ctx, "warm", 1, huge); err != nil {
					t.Errorf("Take before the connections were dropped: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if out, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatalf("CLIENT KILL: %v (%s)", err, out)
	}
	var failures []error
	for i := 0; ; i++ {
		_, err := s.Take(ctx, "k", 1, huge)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrUnavailable) {
			failures = append(failures, err)
		}
		if i == 5000 {
			t.Fatalf("no Take succeeded after the connections were dropped; failures: %v", failures)
		}
		time.Sleep(2 * time.Millisecond) // a poll interval, not an assertion
	}
	if len(failures) != 1 {
		t.Errorf("%d decisions failed on dropped connections (%v), want 1: the first", len(failures), failures)
	}
}
