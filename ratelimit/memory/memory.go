// Package memory provides the in-memory ratelimit.Store, floodgate's
// default: counters in this process's memory, sharded, expiring, bounded.
//
// Counters are local to the process. Several gateway replicas, each with
// its own memory store, each admit the full limit: N replicas admit N times
// it. Use the Redis store (package ratelimit/redisstore) when replicas must
// share counters.
//
// # Counters and keys
//
// The store keeps one counter per key and Limit: a ratelimit.State of 16
// bytes under a 64-bit hash of the key and the Limit (Count, Window,
// Algorithm), not the key itself. The key is hashed with hash/maphash and
// a seed drawn per Store, so clients cannot choose keys that collide. Two
// distinct counters share a hash with probability 2⁻⁶⁴; with a million
// counters tracked, the chance that a new one lands on an existing one is
// about one in 18 trillion (10⁶/2⁶⁴), and the effect would be that the two
// count together. All counters of one key live in the same shard, so a
// Take with several limits takes one lock.
//
// # Expiry and the bound
//
// A counter whose State has expired (it is back to empty) counts as absent.
// Expired counters are dropped lazily: a Take that inserts a new counter
// first looks at others from a random place in its shard until it has
// seen two live ones (or eight in all), and drops the expired ones. After a flood of short-lived keys ends, a shard whose counters
// have mostly gone is rebuilt smaller, so the memory returns.
//
// The store tracks at most Options.MaxKeys counters, split evenly across
// shards. When a new counter arrives at a full shard, the store looks at
// eight counters chosen at random: it drops those that have expired, or if
// none has, evicts the one that expires first, and of those expiring
// together the one that holds least (fewest events in its windows; for
// GCRA, the one that admitted least recently). A client that keeps being
// active keeps a late expiry and a high count, so a flood of new keys,
// each holding one event, evicts other flood keys first. A new counter is
// never refused, so the bound never blocks anyone: at worst an evicted
// counter restarts empty and its key gets its limit afresh. Stats counts
// the evictions, which are a sign that MaxKeys is too small.
//
// # Clock
//
// The store reads Options.Now, by default the system clock read through
// the monotonic clock (immune to wall-clock steps, a few nanoseconds
// cheaper than time.Now). Any clock gives correct decisions, including one
// that goes back (see ratelimit.Limit.Take).
package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// DefaultMaxKeys is the number of counters a Store tracks unless
// Options.MaxKeys says otherwise.
const DefaultMaxKeys = 1 << 20

// Sampling sizes, see the package comment.
const (
	sweepLive   = 2 // live counters seen before a sweep stops
	sweepMost   = 8 // counters a sweep looks at, at most
	evictSample = 8 // counters looked at when a full shard makes room
	shrinkMin   = 4096
)

// Options configures a Store. The zero value gives the defaults.
type Options struct {
	// Now is the clock. Default: the system clock, read monotonically.
	// It must be safe for concurrent use. When replaying logs, a clock that
	// never goes back (the latest timestamp seen) lets expiry drop only
	// counters that no later Take would count.
	Now func() time.Time
	// MaxKeys is the most counters (one per key and limit) the store
	// tracks; see the package comment for what happens beyond it. Default
	// DefaultMaxKeys (1048576): at about 40 bytes each, 40 MiB at most.
	MaxKeys int
	// Shards is the number of independently locked parts of the store,
	// rounded up to a power of two, at most 65536 and at most MaxKeys.
	// Default 4×GOMAXPROCS, at least 16.
	Shards int
}

// Stats are counts about a Store, for metrics.
type Stats struct {
	// Keys is the number of counters tracked now, one per key and limit,
	// including expired ones not dropped yet.
	Keys int
	// MaxKeys is the most counters the store tracks: Options.MaxKeys
	// rounded down to a multiple of the number of shards.
	MaxKeys int
	// Evictions counts counters dropped before they expired, to make room
	// for new ones, since the store was made.
	Evictions uint64
	// Expired counts counters dropped after they expired.
	Expired uint64
}

// A Store is the in-memory ratelimit.Store. Make one with New; it is safe
// for concurrent use, and Take is exact under concurrency: admission and
// recording happen under one lock. A Store needs no closing.
type Store struct {
	shards []shard
	shift  uint // h >> shift is a key's shard
	seed   maphash.Seed
	lseed  uint64 // mixed into counter keys with the limit

	clock func() time.Time // nil: the monotonic clock below
	start time.Time        // with a monotonic reading
	epoch int64            // start, in Unix nanoseconds
}

var _ ratelimit.Store = (*Store)(nil)

// shard is a part of the Store, padded to its own cache lines so that two
// cores locking neighbouring shards do not contend for one line.
type shard struct {
	shardData
	_ [128 - unsafe.Sizeof(shardData{})%128]byte
}

type shardData struct {
	mu        sync.Mutex
	m         map[uint64]ratelimit.State
	max       int // most counters
	peak      int // most counters since m was made: m's capacity, roughly
	evictions uint64
	expired   uint64
}

// New returns an empty Store configured by opts. Out-of-range options
// take their defaults (or the nearest allowed value).
func New(opts Options) *Store {
	maxKeys := opts.MaxKeys
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	n := opts.Shards
	if n <= 0 {
		n = max(16, 4*runtime.GOMAXPROCS(0))
	}
	n = min(n, 1<<16)
	n = 1 << bits.Len(uint(n-1)) // round up to a power of two
	for n > maxKeys {
		n >>= 1
	}
	s := &Store{
		shards: make([]shard, n),
		shift:  uint(64 - bits.TrailingZeros(uint(n))),
		seed:   maphash.MakeSeed(),
		lseed:  rand.Uint64(),
		clock:  opts.Now,
		start:  time.Now(),
	}
	s.epoch = s.start.UnixNano()
	for i := range s.shards {
		s.shards[i].m = make(map[uint64]ratelimit.State)
		s.shards[i].max = maxKeys / n
	}
	return s
}

// Take records n events for key under every limit in limits if all admit
// them, as ratelimit.Store documents. It never blocks beyond a short
// critical section, so it ignores ctx, and its only errors are for bad
// arguments: no limits (ratelimit.ErrNoLimits), a negative n, or a limit
// that fails Limit.Validate. It does not allocate; calling it through the
// ratelimit.Store interface with a literal list of limits allocates that
// list, a slice built once does not.
func (s *Store) Take(_ context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	if err := check(n, limits); err != nil {
		return ratelimit.Decision{}, err
	}
	now := s.now()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h>>s.shift]
	if len(limits) != 1 {
		return s.takeAll(sh, h, limits, now, n), nil
	}
	// One limit, the common case, written out here: a Decision does not
	// fit in registers, so each call it passes through costs copies.
	l := limits[0]
	k := s.counterKey(h, l)
	sh.mu.Lock()
	st, found := sh.m[k]
	next, d := l.Take(st, now, n)
	if next != st {
		if found {
			sh.m[k] = next
		} else {
			sh.insert(k, next, now)
		}
	}
	sh.mu.Unlock()
	return d, nil
}

func check(n int64, limits []ratelimit.Limit) error {
	if len(limits) == 0 {
		return ratelimit.ErrNoLimits
	}
	if n < 0 {
		return fmt.Errorf("memory: take %d events: n must not be negative", n)
	}
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("memory: take: limit %d (%s): %w", i, l, err)
		}
	}
	return nil
}

// now returns the current instant in Unix nanoseconds.
func (s *Store) now() int64 {
	if s.clock != nil {
		return s.clock().UnixNano()
	}
	return s.epoch + int64(time.Since(s.start))
}

// counterKey returns the map key of the counter for the key hashed to h
// under l. For one key, limits with the same Window differ in the low 56
// bits (Count < 2⁵⁶ by Validate) or the high 8 (Algorithm), and limits
// with different Windows are mixed apart; distinct keys share a counter
// with probability 2⁻⁶⁴, as their hashes do.
func (s *Store) counterKey(h uint64, l ratelimit.Limit) uint64 {
	return mix(h^s.lseed^uint64(l.Window)) ^ uint64(l.Count) ^ uint64(l.Algorithm)<<56
}

// mix is a bijective 64-bit mixer (MurmurHash3's finalizer).
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// takeAll is Take for several limits, all or nothing, under one lock.
func (s *Store) takeAll(sh *shard, h uint64, limits []ratelimit.Limit, now, n int64) ratelimit.Decision {
	// The first few counters are remembered between the two passes; the
	// rest, if any, are looked up again.
	const remembered = 4
	var (
		keys      [remembered]uint64
		old, next [remembered]ratelimit.State
		found     [remembered]bool
		d         ratelimit.Decision
	)
	sh.mu.Lock()
	for i, l := range limits {
		k := s.counterKey(h, l)
		st, ok := sh.m[k]
		st2, di := l.Take(st, now, n)
		switch { // ratelimit.Combine, without copying d each time
		case i == 0:
			d = di
		case !d.Allowed:
			if !di.Allowed {
				d.RetryAfter = max(d.RetryAfter, di.RetryAfter)
			}
		case !di.Allowed || di.Remaining < d.Remaining:
			d = di
			d.Limit = i
		}
		if i < remembered {
			keys[i], old[i], next[i], found[i] = k, st, st2, ok
		}
	}
	for i, l := range limits {
		var (
			k       uint64
			st, st2 ratelimit.State
			ok      bool
		)
		if i < remembered {
			k, st, st2, ok = keys[i], old[i], next[i], found[i]
		} else {
			if repeats(limits[:i], l) {
				continue // one counter, already written
			}
			k = s.counterKey(h, l)
			st, ok = sh.m[k]
			st2, _ = l.Take(st, now, n)
		}
		if !d.Allowed {
			st2, _ = l.Take(st, now, 0) // record nothing, keep a State moved by a clock step
		}
		if st2 != st {
			sh.put(k, st2, ok, now)
		}
	}
	sh.mu.Unlock()
	return d
}

func repeats(limits []ratelimit.Limit, l ratelimit.Limit) bool {
	for _, m := range limits {
		if m == l {
			return true
		}
	}
	return false
}

// put stores st as the counter k, which was in the shard when the caller
// looked if found. The caller holds sh.mu. Making room for one counter may
// have evicted another of the same Take, or a repeated limit may have
// inserted k since: k is looked up again unless that cannot matter.
func (sh *shard) put(k uint64, st ratelimit.State, found bool, now int64) {
	if found && len(sh.m) < sh.max {
		sh.m[k] = st
		return
	}
	if _, ok := sh.m[k]; ok {
		sh.m[k] = st
		return
	}
	sh.insert(k, st, now)
}

// insert adds the counter k, which is not in the shard, making room for it
// if the shard is full. The caller holds sh.mu.
func (sh *shard) insert(k uint64, st ratelimit.State, now int64) {
	if len(sh.m) >= sh.max {
		sh.makeRoom(now)
	} else {
		sh.sweep(now)
	}
	sh.m[k] = st
	sh.peak = max(sh.peak, len(sh.m))
}

// sweep looks at counters from a random place until it has seen a few
// live ones (or a few more in all), drops the expired ones it saw, and
// rebuilds the map once most of its counters have gone.
func (sh *shard) sweep(now int64) {
	seen, live := 0, 0
	for k, st := range sh.m { // map iteration starts at a random place
		if st.Expiry <= now {
			delete(sh.m, k)
			sh.expired++
		} else {
			live++
		}
		if seen++; live == sweepLive || seen == sweepMost {
			break
		}
	}
	if sh.peak >= shrinkMin && len(sh.m) <= sh.peak/8 {
		m := make(map[uint64]ratelimit.State, 2*len(sh.m))
		for k, st := range sh.m {
			m[k] = st
		}
		sh.m, sh.peak = m, len(m)
	}
}

// makeRoom drops at least one counter from a full shard: the expired ones
// among a few chosen at random, or else the one of them that expires
// first and holds least.
func (sh *shard) makeRoom(now int64) {
	var (
		victim   uint64
		vs       ratelimit.State
		i        int
		freed    bool
		selected bool
	)
	for k, st := range sh.m {
		switch {
		case st.Expiry <= now:
			delete(sh.m, k)
			sh.expired++
			freed = true
		case !selected || st.Expiry < vs.Expiry || st.Expiry == vs.Expiry && st.Data < vs.Data:
			victim, vs, selected = k, st, true
		}
		if i++; i == evictSample {
			break
		}
	}
	if !freed && selected {
		delete(sh.m, victim)
		sh.evictions++
	}
}

// Stats returns the store's current counts. It locks each shard in turn,
// briefly; the counts of different shards may be from slightly different
// instants.
func (s *Store) Stats() Stats {
	var st Stats
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		st.Keys += len(sh.m)
		st.MaxKeys += sh.max
		st.Evictions += sh.evictions
		st.Expired += sh.expired
		sh.mu.Unlock()
	}
	return st
}
