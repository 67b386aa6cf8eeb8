// Package scaleout simulates floodgate past one machine: it replays a
// recorded trace through N in-process replicas, each with its own
// limiter and its own store connections as a separate gateway process
// would have, sharing one Redis, a Redis Cluster, or (for comparison)
// nothing, and counts what they admit against what one exact counter
// admits for the same requests (docs/scaling.md).
//
// Each replica is an httplimit.Limiter over its own ratelimit.Store (a
// redisstore.Store, or a memory.Store when nothing is shared) with one
// rule keyed by the client; the rule's Take is the decision the gateway
// makes for a rule that matches a request. Requests are dealt to the
// replicas in turn, as a round-robin load balancer deals them (the worst
// case for sharing: every client's requests reach every replica), at a
// fixed rate, open loop: request i is sent at start + i/rate whatever the
// replicas are doing, and each replica serves its share with a pool of
// workers, as a gateway serves its connections.
//
// The exact count is what ratelimit/memory, one counter for all, admits
// when it sees the trace's requests in the same order at the instants they
// were sent. With a limit that cannot refill during a run (the default,
// gcra 20/1h: one event back every 3 minutes), that is Σ min(requests,
// 20) over the clients, however the replicas' requests interleave, so
// any difference is the store's.
//
// A Fault, called once the replay is half sent, stops a Redis node: what
// the replicas admit then is the failure policy's. Both policies are
// counted from one run: fail open admits every decision the store failed,
// fail closed refuses it.
//
// The package is driven by its tests (TestScaleOut prints the table of
// bench/scaleout.sh), which start the Redis servers with
// internal/redistest.
package scaleout

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// A Trace is the clients of a log's requests, in the log's order.
type Trace struct {
	Clients []string
	// Distinct is the number of distinct clients.
	Distinct int
}

// ReadTrace reads a log with internal/logs (any format it detects) and
// keeps the client of every request record, at most most of them (0: all).
func ReadTrace(name string, most int) (Trace, error) {
	var tr Trace
	seen := map[string]bool{}
	_, err := logs.ReadFiles([]string{name}, logs.ReadOptions{}, func(r *logs.Record) {
		if r.Kind != logs.KindRequest || len(r.Client) == 0 || (most > 0 && len(tr.Clients) >= most) {
			return
		}
		c := string(r.Client)
		tr.Clients = append(tr.Clients, c)
		seen[c] = true
	})
	if err != nil {
		return Trace{}, err
	}
	if len(tr.Clients) == 0 {
		return Trace{}, fmt.Errorf("scaleout: %s: no request with a client", name)
	}
	tr.Distinct = len(seen)
	return tr, nil
}

// Topology says where the replicas count.
type Topology uint8

const (
	// Local: every replica counts for itself in memory (floodgate's
	// default store), nothing shared.
	Local Topology = iota
	// Single: one Redis server shared by all.
	Single
	// Cluster: a Redis Cluster, each key's counters on the node that owns
	// its hash slot; floodgate's own way of spreading counters over
	// nodes (redis://h1,h2,h3).
	Cluster
	// Sharded: independent Redis servers, one redisstore.Store each per
	// replica, each client on the server its key's hash picks. floodgate
	// does not offer this; it is here to show what it would change at a
	// node's failure.
	Sharded
)

func (t Topology) String() string {
	switch t {
	case Local:
		return "memory, per replica"
	case Single:
		return "redis, one server"
	case Cluster:
		return "redis cluster"
	case Sharded:
		return "redis, client-side shards"
	}
	return "?"
}

// Config is one run.
type Config struct {
	Topology Topology
	// Addrs are the Redis servers: one for Single, the nodes of the
	// cluster for Cluster (any one is enough), one per shard for Sharded.
	Addrs []string
	// Replicas is the number of replicas (at least 1).
	Replicas int
	// Workers is each replica's number of concurrent decisions. Default 16.
	Workers int
	// Rate is the requests per second sent, over all replicas. Default
	// 5000.
	Rate float64
	// Limit is the rule's limit.
	Limit ratelimit.Limit
	// KeyPrefix starts the Redis keys of the run (redisstore's
	// KeyPrefix), so runs sharing a server do not see each other's
	// counters. Default "fg:".
	KeyPrefix string
	// Timeout is the store's timeout and the limiter's StoreTimeout.
	// Default 100ms (floodgate's).
	Timeout time.Duration
	// Fault, if not nil, is called once half of the trace has been sent.
	Fault func()
}

// A Result is what one run counted.
type Result struct {
	Config   Config
	Requests int
	// Exact is what one exact counter admits.
	Exact int
	// Admitted is what the replicas admitted with fail open (floodgate's
	// default): Decided plus the decisions the store failed.
	Admitted int
	// Decided is what the store itself admitted: what the replicas admit
	// with fail closed.
	Decided int
	// StoreErrors counts the decisions the store failed.
	StoreErrors int
	// RoundTrips and Takes are the Redis stores' counts, summed over the
	// replicas (0 for Local).
	RoundTrips, Takes, CacheHits uint64
	// P50 and P99 are the percentiles of one decision's time (Rule.Take).
	P50, P99 time.Duration
	// Elapsed is how long sending the trace and deciding took.
	Elapsed time.Duration
}

// Run replays tr through the replicas of c.
func Run(ctx context.Context, c Config, tr Trace) (Result, error) {
	if c.Replicas < 1 {
		return Result{}, errors.New("scaleout: replicas must be at least 1")
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.Rate <= 0 {
		c.Rate = 5000
	}
	if c.Timeout <= 0 {
		c.Timeout = 100 * time.Millisecond
	}
	if err := c.Limit.Validate(); err != nil {
		return Result{}, fmt.Errorf("scaleout: limit: %w", err)
	}
	interval := time.Duration(float64(time.Second) / c.Rate)
	res := Result{Config: c, Requests: len(tr.Clients), Exact: exact(tr, c.Limit, interval)}

	reps := make([]*replica, c.Replicas)
	defer func() {
		for _, r := range reps {
			if r != nil {
				r.close()
			}
		}
	}()
	for i := range reps {
		r, err := newReplica(ctx, c)
		if err != nil {
			return Result{}, err
		}
		reps[i] = r
	}

	type job struct{ client string }
	queues := make([]chan job, len(reps))
	lat := make([][]time.Duration, len(reps)*c.Workers)
	var admitted, decided, failed atomic.Int64
	var wg sync.WaitGroup
	for i, r := range reps {
		queues[i] = make(chan job, len(tr.Clients)/len(reps)+1)
		for w := range c.Workers {
			wg.Add(1)
			go func(r *replica, q <-chan job, l *[]time.Duration) {
				defer wg.Done()
				for j := range q {
					t0 := time.Now()
					d, err := r.rule.Take(ctx, j.client)
					*l = append(*l, time.Since(t0))
					if d.Allowed {
						admitted.Add(1)
						if err == nil {
							decided.Add(1)
						}
					}
					if err != nil {
						failed.Add(1)
					}
				}
			}(r, queues[i], &lat[i*c.Workers+w])
		}
	}

	start := time.Now()
	half := len(tr.Clients) / 2
	for i, client := range tr.Clients {
		if i == half && c.Fault != nil {
			c.Fault()
		}
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		queues[i%len(queues)] <- job{client}
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)

	res.Admitted, res.Decided, res.StoreErrors = int(admitted.Load()), int(decided.Load()), int(failed.Load())
	for _, r := range reps {
		for _, s := range r.redis {
			st := s.Stats()
			res.RoundTrips += st.RoundTrips
			res.Takes += st.Takes
			res.CacheHits += st.CacheHits
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	res.P50, res.P99 = percentile(all, 0.50), percentile(all, 0.99)
	return res, nil
}

// exact returns what one memory store admits for tr's requests in order,
// request i at instant i×interval.
func exact(tr Trace, l ratelimit.Limit, interval time.Duration) int {
	t0 := time.Unix(1_700_000_000, 0)
	var now time.Time
	s := memory.New(memory.Options{Now: func() time.Time { return now }})
	n := 0
	for i, c := range tr.Clients {
		now = t0.Add(time.Duration(i) * interval)
		if d, err := s.Take(context.Background(), c, 1, l); err == nil && d.Allowed {
			n++
		}
	}
	return n
}

// percentile returns the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// A replica is one gateway's limiter and its own store connections.
type replica struct {
	rule  *httplimit.Rule
	redis []*redisstore.Store
}

func newReplica(ctx context.Context, c Config) (*replica, error) {
	r := &replica{}
	var store ratelimit.Store
	switch c.Topology {
	case Local:
		store = memory.New(memory.Options{})
	case Single, Cluster:
		s, err := r.connect(ctx, c, c.Addrs)
		if err != nil {
			return nil, err
		}
		store = s
	case Sharded:
		var sh shards
		for _, a := range c.Addrs {
			s, err := r.connect(ctx, c, []string{a})
			if err != nil {
				r.close()
				return nil, err
			}
			sh = append(sh, s)
		}
		store = sh
	default:
		return nil, fmt.Errorf("scaleout: unknown topology %d", c.Topology)
	}
	l, err := httplimit.New(store, httplimit.Options{StoreTimeout: c.Timeout})
	if err != nil {
		r.close()
		return nil, err
	}
	r.rule, err = l.NewRule(httplimit.RuleSpec{Name: "per-client", Limits: []ratelimit.Limit{c.Limit}})
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// connect makes a Redis store for addrs and waits until it answers (at
// most 10 s), so that a run starts with every replica connected.
func (r *replica) connect(ctx context.Context, c Config, addrs []string) (*redisstore.Store, error) {
	s, err := redisstore.New(redisstore.Options{Addrs: addrs, KeyPrefix: c.KeyPrefix, Timeout: c.Timeout})
	if err != nil {
		return nil, err
	}
	r.redis = append(r.redis, s)
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.Ping(ctx)
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("scaleout: redis %v does not answer: %w", addrs, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval
	}
}

func (r *replica) close() {
	for _, s := range r.redis {
		s.Close()
	}
}

// shards is a Store over independent Redis servers: each key goes to the
// one its FNV-1a hash picks, and each server has its own connections and
// its own fail-fast state.
type shards []*redisstore.Store

func (s shards) Take(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	return s.pick(key).Take(ctx, key, n, limits...)
}

// Charge charges on the server Take would ask, for the rules' costs.
func (s shards) Charge(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	return s.pick(key).Charge(ctx, key, n, limits...)
}

// pick returns the server of key.
func (s shards) pick(key string) *redisstore.Store {
	h := fnv.New32a()
	h.Write([]byte(key))
	return s[h.Sum32()%uint32(len(s))]
}
