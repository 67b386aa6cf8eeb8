// Package memory provides the in-memory ratelimit.Store, floodgate's
// default: counters in this process's memory, sharded, expiring, bounded,
// exact under concurrency.
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
// Algorithm), not the key itself, so a counter takes 24 bytes of a hash
// table, about 28 to 41 bytes a counter with the table's free slots. The
// key is hashed with hash/maphash and a seed drawn per Store, so clients
// cannot choose keys that collide (unless Options.Seed is set: see
// there). Two distinct counters share a hash with probability 2⁻⁶⁴; with a million counters tracked, the chance that a
// new one lands on an existing one is about one in 18 trillion (10⁶/2⁶⁴),
// and the effect would be that the two count together.
//
// The store is split into shards, each a lock and a table; all counters of
// one key live in the same shard, so a Take with several limits takes one
// lock, and decides and records atomically.
//
// # Expiry and the bound
//
// A counter whose State has expired (it is back to empty) counts as absent.
// Expired counters are dropped lazily: a Take that inserts a new counter
// first looks at others in random slots of its shard until it has seen two
// live ones (or eight in all), and drops the expired ones. Once a
// shard's table is seven eighths empty it is rebuilt smaller, so the
// memory a flood took returns as ordinary traffic brings new keys.
//
// The store tracks at most Options.MaxKeys counters, split evenly across
// shards, in at most 24×8/7 ≈ 27.5 bytes each once full: its tables never
// grow beyond that, whatever arrives. When a new counter arrives at a full
// shard, the store looks at eight counters in random slots: it drops
// those that have expired, or if none has, evicts the one that expires
// first, and of those expiring together the one that holds least (fewest
// events in its windows; for GCRA, the one that admitted least recently).
// A client that keeps being active keeps a late expiry and a high count,
// so a flood of new keys, each holding one event, evicts other flood keys
// first. A new counter is never refused, so the bound never blocks anyone:
// at worst an evicted counter restarts empty and its key gets its limit
// afresh. Stats counts evictions, a sign that MaxKeys is too small or that
// a flood of keys is under way.
//
// Which slots a sweep or an eviction looks at is drawn at random, and the
// hashes that place counters in shards and slots use a seed drawn per
// Store, so two stores given the same Takes may evict different counters.
// A store with Options.Seed set draws both from that seed instead: the
// same Takes at the same instants then give the same decisions and Stats,
// evictions included (floodgate replay relies on it).
//
// # Clock
//
// The store reads Options.Now, by default the system clock read through
// Go's monotonic clock: the wall-clock time when the store was made plus
// the monotonic time since, which costs half as much as time.Now and does
// not follow steps of the wall clock. Any clock gives correct decisions,
// including one that goes back (see ratelimit.Limit.Take).
package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
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
	minSlots    = 16
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
	// DefaultMaxKeys (1048576), whose tables take 28 MiB when full.
	MaxKeys int
	// Shards is the number of independently locked parts of the store,
	// rounded up to a power of two, at most 65536 and at most MaxKeys.
	// Default 4×GOMAXPROCS, at least 16. A store that must give the same
	// results on every machine (see Seed) sets it.
	Shards int
	// Seed, when not zero, makes the store deterministic: its key hashes
	// and its random choices (the counters a sweep or an eviction looks
	// at) derive from Seed instead of being drawn by New, so the same
	// sequence of Takes at the same instants gives the same decisions and
	// Stats, in every run and, with the same Shards, on every machine.
	// It is for replaying recorded traffic and for tests: whoever knows
	// the seed can choose keys (an address, a header) whose hashes
	// collide, so a store facing live traffic leaves it zero. Keys are
	// then hashed by a function of the package's own, about as fast as
	// hash/maphash, and shards are locked as usual: Takes from several
	// goroutines are exact, but their order, hence the evictions, is the
	// callers'.
	Seed uint64
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
	kseed  uint64 // Options.Seed: keys hashed by seededHash, not maphash

	clock func() time.Time // nil: the monotonic clock below
	start time.Time        // with a monotonic reading
	epoch int64            // start, in Unix nanoseconds
}

var _ ratelimit.Charger = (*Store)(nil)

// shard is a part of the Store, padded to its own cache lines so that two
// cores locking neighbouring shards do not contend for one line.
type shard struct {
	shardData
	_ [128 - unsafe.Sizeof(shardData{})%128]byte
}

type shardData struct {
	mu        sync.Mutex
	t         table
	max       int // most counters
	maxSlots  int // slots that max counters fit in
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
		kseed:  opts.Seed,
		clock:  opts.Now,
		start:  time.Now(),
	}
	if opts.Seed != 0 {
		s.lseed = mix(opts.Seed ^ 0x6c696d6974736565) // "limitsee"
	}
	s.epoch = s.start.UnixNano()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.max = maxKeys / n
		sh.maxSlots = capacityFor(sh.max)
		if opts.Seed != 0 {
			sh.t.rng = rand.NewPCG(opts.Seed, uint64(i))
		}
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
	h := s.hash(key)
	sh := &s.shards[h>>s.shift]
	if len(limits) != 1 {
		return s.takeAll(sh, h, limits, now, n), nil
	}
	// One limit, the common case, written out here: a Decision does not
	// fit in registers, so each call it passes through costs copies.
	l := limits[0]
	k := s.counterKey(h, l)
	sh.mu.Lock()
	var st ratelimit.State
	i := sh.t.find(k)
	if i >= 0 {
		st = sh.t.slots[i].st
	}
	next, d := l.Take(st, now, n)
	if next != st {
		if i >= 0 {
			sh.t.slots[i].st = next
		} else {
			sh.insert(k, next, now)
		}
	}
	sh.mu.Unlock()
	return d, nil
}

// Charge records n events for key under every limit whether or not they
// fit, as ratelimit.Charger documents: a cost known once a request was
// served. Its errors are Take's.
func (s *Store) Charge(_ context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	if err := check(n, limits); err != nil {
		return ratelimit.Decision{}, err
	}
	now := s.now()
	h := s.hash(key)
	sh := &s.shards[h>>s.shift]
	var d ratelimit.Decision
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i, l := range limits { // every decision first, on the counters as they were
		st, _ := sh.get(s.counterKey(h, l))
		_, di := l.Charge(st, now, n)
		d = ratelimit.Combine(d, i, di)
	}
	for i, l := range limits {
		if repeats(limits[:i], l) {
			continue // one counter, charged once
		}
		k := s.counterKey(h, l)
		st, _ := sh.get(k)
		if st2, _ := l.Charge(st, now, n); st2 != st {
			sh.put(k, st2, now)
		}
	}
	if !d.Allowed {
		// Until one more event fits everywhere: a limit the events
		// fitted under may be full now, and refuse it for longer.
		for _, l := range limits {
			st, _ := sh.get(s.counterKey(h, l))
			if _, one := l.Take(st, now, 1); !one.Allowed {
				d.RetryAfter = max(d.RetryAfter, one.RetryAfter)
			}
		}
	}
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

// hash returns key's 64-bit hash: by hash/maphash with the store's seed,
// or by seededHash when Options.Seed is set.
func (s *Store) hash(key string) uint64 {
	if s.kseed != 0 {
		return seededHash(s.kseed, key)
	}
	return maphash.String(s.seed, key)
}

// seededHash hashes key with seed: eight bytes at a time, each word mixed
// into the state by mix (a bijection), the length folded in first. The
// same seed and key give the same hash on every machine.
func seededHash(seed uint64, key string) uint64 {
	h := mix(seed ^ uint64(len(key))*0x9e3779b97f4a7c15)
	for len(key) >= 8 {
		w := uint64(key[0]) | uint64(key[1])<<8 | uint64(key[2])<<16 | uint64(key[3])<<24 |
			uint64(key[4])<<32 | uint64(key[5])<<40 | uint64(key[6])<<48 | uint64(key[7])<<56
		h = mix(h ^ w)
		key = key[8:]
	}
	if len(key) > 0 {
		var w uint64
		for i := range len(key) {
			w |= uint64(key[i]) << (8 * i)
		}
		h = mix(h ^ w)
	}
	return h
}

// counterKey returns the table key of the counter for the key hashed to h
// under l: never 0, which marks an empty slot. For one key, limits with
// the same Window differ in the low 56 bits (Count < 2⁵⁶ by Validate) or
// the high 8 (Algorithm), and limits with different Windows are mixed
// apart; distinct keys share a counter with probability 2⁻⁶⁴, as their
// hashes do.
func (s *Store) counterKey(h uint64, l ratelimit.Limit) uint64 {
	k := mix(h^s.lseed^uint64(l.Window)) ^ uint64(l.Count) ^ uint64(l.Algorithm)<<56
	if k == 0 {
		k = 1
	}
	return k
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
		d         ratelimit.Decision
	)
	sh.mu.Lock()
	for i, l := range limits {
		k := s.counterKey(h, l)
		st, _ := sh.get(k)
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
			keys[i], old[i], next[i] = k, st, st2
		}
	}
	for i, l := range limits {
		var (
			k       uint64
			st, st2 ratelimit.State
		)
		if i < remembered {
			k, st, st2 = keys[i], old[i], next[i]
		} else {
			if repeats(limits[:i], l) {
				continue // one counter, already written
			}
			k = s.counterKey(h, l)
			st, _ = sh.get(k)
			st2, _ = l.Take(st, now, n)
		}
		if !d.Allowed {
			st2, _ = l.Take(st, now, 0) // record nothing, keep a State moved by a clock step
		}
		if st2 != st {
			sh.put(k, st2, now)
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

// get returns the counter k, which is empty if absent.
func (sh *shard) get(k uint64) (ratelimit.State, bool) {
	if i := sh.t.find(k); i >= 0 {
		return sh.t.slots[i].st, true
	}
	return ratelimit.State{}, false
}

// put stores st as the counter k. The caller holds sh.mu. (Making room for
// one counter of a Take may evict another counter of the same Take, so
// put looks k up again rather than trusting an earlier lookup.)
func (sh *shard) put(k uint64, st ratelimit.State, now int64) {
	if i := sh.t.find(k); i >= 0 {
		sh.t.slots[i].st = st
		return
	}
	sh.insert(k, st, now)
}

// insert adds the counter k, which is not in the shard, making room for it
// if the shard is full, and growing the table if needed. The caller holds
// sh.mu.
func (sh *shard) insert(k uint64, st ratelimit.State, now int64) {
	t := &sh.t
	if t.n >= sh.max {
		sh.makeRoom(now)
	} else {
		sh.sweep(now)
	}
	if !fits(t.n+1, len(t.slots)) {
		t.resize(min(max(len(t.slots)*3/2, minSlots), sh.maxSlots))
	}
	t.insert(k, st)
}

// sweep looks at counters in random slots until it has seen a few live
// ones (or a few more in all), drops the expired ones it saw, and shrinks
// the table once seven eighths of its slots are empty.
func (sh *shard) sweep(now int64) {
	t := &sh.t
	if t.n == 0 {
		return
	}
	var expired [sweepMost]uint64
	n := 0
	for seen, live := 0, 0; live < sweepLive && seen < sweepMost; seen++ {
		s := &t.slots[t.randomSlot()]
		if s.st.Expiry > now {
			live++
		} else if !slices.Contains(expired[:n], s.key) {
			expired[n] = s.key
			n++
		}
	}
	for _, k := range expired[:n] {
		t.removeAt(t.find(k))
		sh.expired++
	}
	if len(t.slots) > minSlots && 8*t.n < len(t.slots) {
		t.resize(max(minSlots, 2*capacityFor(t.n)))
	}
}

// makeRoom drops at least one counter from a full shard: the expired ones
// among a few in random slots, or else the one of those that expires
// first and holds least.
func (sh *shard) makeRoom(now int64) {
	t := &sh.t
	var (
		expired [evictSample]uint64
		n       int
		victim  slot
	)
	for range evictSample {
		s := t.slots[t.randomSlot()]
		switch {
		case s.st.Expiry <= now:
			if !slices.Contains(expired[:n], s.key) {
				expired[n] = s.key
				n++
			}
		case victim.key == 0 || s.st.Expiry < victim.st.Expiry || s.st.Expiry == victim.st.Expiry && s.st.Data < victim.st.Data:
			victim = s
		}
	}
	if n == 0 {
		t.removeAt(t.find(victim.key))
		sh.evictions++
		return
	}
	for _, k := range expired[:n] {
		t.removeAt(t.find(k))
		sh.expired++
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
		st.Keys += sh.t.n
		st.MaxKeys += sh.max
		st.Evictions += sh.evictions
		st.Expired += sh.expired
		sh.mu.Unlock()
	}
	return st
}
