package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/storetest"
)

var ctx = context.Background()

// testTimeout is the Options.Timeout of the tests' stores unless they
// set one: generous, because the race detector and parallel tests on a
// shared 2-core machine slow round trips down by orders of magnitude, and
// a timeout would fail a test that is not about timeouts.
const testTimeout = 5 * time.Second

// newStore returns a Store for o, closed when the test ends, once it has
// connected. A zero o.Timeout is testTimeout.
func newStore(t testing.TB, o Options) *Store {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = testTimeout
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New(%v): %v", o, err)
	}
	t.Cleanup(func() { s.Close() })
	waitUp(t, s)
	return s
}

// waitUp waits until s has connected, for at most a generous deadline.
func waitUp(t testing.TB, s *Store) {
	t.Helper()
	deadline := time.Now().Add(redistest.ReadyTimeout)
	for s.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("store not connected after %v: %v", redistest.ReadyTimeout, s.Ping(ctx))
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not an assertion
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return newStore(t, Options{Addrs: []string{srv.Addr()}})
	})
}

func TestConformanceNoCache(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return newStore(t, Options{Addrs: []string{srv.Addr()}, CacheSize: -1})
	})
}

func TestConformanceKeySecret(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T) ratelimit.Store {
		return newStore(t, Options{Addrs: []string{srv.Addr()}, KeySecret: []byte("s3cret")})
	})
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	t.Run("all nodes", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) ratelimit.Store {
			s := newStore(t, Options{Addrs: c.Addrs()})
			if !s.Stats().Cluster {
				t.Errorf("Stats().Cluster = false with %d cluster nodes", len(c.Addrs()))
			}
			return s
		})
	})
	t.Run("one node, detected", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) ratelimit.Store {
			// Another prefix: the suite's key "" is the same in both runs.
			s := newStore(t, Options{Addrs: c.Addrs()[1:2], KeyPrefix: "fg1:"})
			if !s.Stats().Cluster {
				t.Errorf("Stats().Cluster = false with one cluster node's address")
			}
			return s
		})
	})
}

// TestExactAcrossReplicas has two Stores, as two gateway replicas would,
// take from one key on one Redis at once.
func TestExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	replicas := []*Store{
		newStore(t, Options{Addrs: []string{srv.Addr()}}),
		newStore(t, Options{Addrs: []string{srv.Addr()}}),
	}
	for _, a := range []ratelimit.Algorithm{ratelimit.SlidingWindow, ratelimit.GCRA, ratelimit.FixedWindow} {
		t.Run(a.String(), func(t *testing.T) {
			const limit, goroutines, each = 150, 24, 20
			l := ratelimit.Limit{Count: limit, Window: ratelimit.MaxWindow, Algorithm: a}
			key := t.Name()
			var admitted, perReplica [2]atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for r, s := range replicas {
				for range goroutines {
					wg.Go(func() {
						<-start
						for range each {
							d, err := s.Take(ctx, key, 1, l)
							if err != nil {
								t.Errorf("replica %d: Take(%q, 1, %v): %v", r, key, l, err)
								return
							}
							if d.Allowed {
								admitted[0].Add(1)
								perReplica[r].Add(1)
							}
						}
					})
				}
			}
			close(start)
			wg.Wait()
			if got := admitted[0].Load(); got != limit {
				t.Errorf("2 replicas × %d goroutines × %d Takes of %v: %d admitted, want exactly %d", goroutines, each, l, got, limit)
			}
			if perReplica[0].Load() == 0 || perReplica[1].Load() == 0 {
				t.Logf("admitted per replica: %d, %d (one replica got none: the test did not interleave)", perReplica[0].Load(), perReplica[1].Load())
			}
		})
	}
}

// TestClusterKeysOnOneSlot checks that a Take with several limits writes
// all its counters on one node, in one hash slot, under the documented
// names, and that the caller's key appears nowhere in Redis.
func TestClusterKeysOnOneSlot(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	s := newStore(t, Options{Addrs: c.Addrs()})
	limits := []ratelimit.Limit{
		{Count: 60, Window: time.Minute, Algorithm: ratelimit.GCRA},
		{Count: 1500, Window: 5 * time.Minute},
		{Count: 5000, Window: 24 * time.Hour, Algorithm: ratelimit.FixedWindow},
	}
	const clients = 20
	for i := range clients {
		key := fmt.Sprintf("203.0.113.%d", i)
		if d, err := s.Take(ctx, key, 1, limits...); err != nil || !d.Allowed {
			t.Fatalf("Take(%q, 1, %v) = %+v, %v, want allowed", key, limits, d, err)
		}
	}
	nodesWithKeys := 0
	total := 0
	for _, n := range c.Nodes {
		out, err := n.Do("KEYS", "fg:*")
		if err != nil {
			t.Fatal(err)
		}
		if out == "" {
			continue
		}
		nodesWithKeys++
		keys := strings.Split(out, "\n")
		total += len(keys)
		byTag := map[string][]string{}
		for _, k := range keys {
			if strings.Contains(k, "203.0.113.") {
				t.Errorf("Redis key %q contains the caller's key", k)
			}
			tag := k[strings.Index(k, "{"):strings.Index(k, "}")]
			byTag[tag] = append(byTag[tag], k)
			v, err := n.Do("GET", k)
			if err != nil || strings.Contains(v, "203.0.113.") {
				t.Errorf("GET %q = %q, %v", k, v, err)
			}
		}
		for tag, ks := range byTag {
			if len(ks) != len(limits) {
				t.Errorf("node %s holds %d keys with tag %s, want all %d of one Take: %q", n.Addr(), len(ks), tag, len(limits), ks)
			}
			slot, _ := n.Do("CLUSTER", "KEYSLOT", ks[0])
			for _, k := range ks[1:] {
				if s2, _ := n.Do("CLUSTER", "KEYSLOT", k); s2 != slot {
					t.Errorf("KEYSLOT %q = %s, KEYSLOT %q = %s, want one slot", ks[0], slot, k, s2)
				}
			}
		}
	}
	if total != clients*len(limits) {
		t.Errorf("%d keys in the cluster, want %d (%d clients × %d limits)", total, clients*len(limits), clients, len(limits))
	}
	if nodesWithKeys < 2 {
		t.Errorf("keys on %d node(s), want them spread over the cluster", nodesWithKeys)
	}
}

// TestKeyLayout checks the documented key names, values and expiry.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app1:"})
	l := ratelimit.Limit{Count: 1500, Window: 5 * time.Minute}
	if _, err := s.Take(ctx, "client", 2, l); err != nil {
		t.Fatal(err)
	}
	keys, err := srv.Do("KEYS", "*")
	if err != nil {
		t.Fatal(err)
	}
	// SHA-256("client") starts with 948fe603f61dc036b5c596dc09fe3ce3.
	const want = "app1:{lI_mA_YdwDa1xZbcCf484w}:s:1500:300000"
	if keys != want {
		t.Fatalf("KEYS * = %q, want %q", keys, want)
	}
	v, _ := srv.Do("GET", want)
	if len(v) != 24 || v[8:] != string(appendNumbers(nil, 2, 0)) {
		t.Errorf("GET %s = %q, want three doubles: EXPIRY_US 2 0", want, v)
	}
	pttl, _ := srv.Do("PTTL", want)
	if ms, err := time.ParseDuration(pttl + "ms"); err != nil || ms <= 5*time.Minute || ms > 10*time.Minute {
		t.Errorf("PTTL %s = %s, want between 5 and 10 minutes (until the next window ends)", want, pttl)
	}
}

func TestNewInvalid(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{"no address", Options{}, []string{"no address"}},
		{"bad address", Options{Addrs: []string{"localhost"}}, []string{`"localhost" is not HOST:PORT`}},
		{"everything", Options{Addrs: []string{"a:1", "b:x"}, DB: 3, Timeout: -1, KeyPrefix: "{x}"},
			[]string{`port "x"`, "only database 0", "timeout -1ns", "{ or }"}},
		{"negative db", Options{Addrs: []string{"a:1"}, DB: -1}, []string{"database -1"}},
	}
	for _, tt := range tests {
		s, err := New(tt.o)
		if err == nil {
			s.Close()
			t.Errorf("%s: New(%+v): no error", tt.name, tt.o)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: New(%+v) error %q, want it to mention %q", tt.name, tt.o, err, w)
			}
		}
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	l := ratelimit.Limit{Count: 5, Window: time.Second}
	if _, err := s.Take(ctx, "k", 1, l); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := s.Take(ctx, "k", 1, l); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Close: error %v, want ErrClosed", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: error %v, want ErrClosed", err)
	}
}

// TestCloseUnderLoad closes a store while Takes are queued and in flight:
// every Take returns, and after Close they fail with ErrClosed.
func TestCloseUnderLoad(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	l := ratelimit.Limit{Count: 1 << 30, Window: time.Hour}
	var wg sync.WaitGroup
	var ok atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := s.Take(ctx, fmt.Sprint("close/", g, "/", i%8), 1, l)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err == nil {
					ok.Add(1)
				}
			}
		})
	}
	for ok.Load() < 100 {
		time.Sleep(time.Millisecond) // a poll interval, not an assertion
	}
	s.Close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(redistest.ReadyTimeout):
		t.Fatalf("Takes still running %v after Close", redistest.ReadyTimeout)
	}
}
