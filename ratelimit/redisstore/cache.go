package redisstore

import (
	"sync"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// The over-limit cache remembers, for counters that refused a Take, the
// counter's State as Redis held it and the server's clock at that moment
// relative to this process's monotonic clock. A later Take replays
// ratelimit.Limit.Take on that snapshot at an estimate of the server's
// clock that is never behind it: if the snapshot refuses, Redis would
// too, since Redis can only hold more events than the snapshot (events are
// only ever added; refused ones are not recorded), and the algorithms
// never admit more when a counter holds more. So a cached refusal is
// always one Redis would give, with RetryAfter shrinking as time passes,
// and once the snapshot would admit, the Take goes to Redis.
//
// The estimate: a reply carrying server instant S arrives for a request
// sent at local instant L0, so S happened at or after L0 and the server's
// clock now is at most S + (now − L0). The snapshot is replayed at that
// bound; the Decision's durations are thus short by at most one round
// trip, never long.
//
// Entries are kept per (key hash, Limit) in shards, each a mutex and a
// map, holding at most their share of Options.CacheSize. A full shard drops
// the entries it finds useless among a few (those whose snapshot is empty
// again) or else an arbitrary one: a dropped entry only costs a round trip.

// cacheShards is the number of cache shards, a power of two.
const cacheShards = 32

type cacheKey struct {
	h keyHash
	l ratelimit.Limit
}

type cacheEntry struct {
	st     ratelimit.State
	offset int64 // server time − local time, ns; see above
}

type cache struct {
	perShard int
	shards   [cacheShards]cacheShard
}

type cacheShard struct {
	cacheShardData
	_ [128 - unsafe.Sizeof(cacheShardData{})%128]byte
}

type cacheShardData struct {
	mu sync.Mutex
	m  map[cacheKey]cacheEntry
}

// newCache returns a cache of about size entries, or nil for size ≤ 0.
func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	c := &cache{perShard: max(1, (size+cacheShards-1)/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[cacheKey]cacheEntry)
	}
	return c
}

func (c *cache) shard(h keyHash) *cacheShard { return &c.shards[h[0]%cacheShards] }

// refuse replays the snapshots of the counters of h under limits at local
// instant now and returns a refusal if one of them refuses n events, as
// Store.Take would report it from the limits the cache knows. It drops
// the snapshots that admit.
func (c *cache) refuse(h keyHash, limits []ratelimit.Limit, n, now int64) (ratelimit.Decision, bool) {
	sh := c.shard(h)
	var d ratelimit.Decision
	refused := false
	sh.mu.Lock()
	if len(sh.m) == 0 {
		sh.mu.Unlock()
		return d, false
	}
	for i, l := range limits {
		k := cacheKey{h, l}
		e, ok := sh.m[k]
		if !ok {
			continue
		}
		_, di := l.Take(e.st, now+e.offset, n)
		switch {
		case di.Allowed:
			delete(sh.m, k) // Redis may admit: ask it
		case !refused:
			d, refused = di, true
			d.Limit = i
		default:
			d.RetryAfter = max(d.RetryAfter, di.RetryAfter)
		}
	}
	sh.mu.Unlock()
	return d, refused
}

// put remembers st, the State of the counter of h under l as Redis held it
// at offset + the local instant now.
func (c *cache) put(h keyHash, l ratelimit.Limit, st ratelimit.State, offset, now int64) {
	sh := c.shard(h)
	k := cacheKey{h, l}
	sh.mu.Lock()
	if _, ok := sh.m[k]; !ok && len(sh.m) >= c.perShard {
		c.makeRoom(sh, now)
	}
	sh.m[k] = cacheEntry{st: st, offset: offset}
	sh.mu.Unlock()
}

// makeRoom drops at least one entry of a full shard: those that are
// empty again among the first few that map iteration (which starts at a
// random place) visits, or else the first one. The caller holds sh.mu.
func (c *cache) makeRoom(sh *cacheShard, now int64) {
	const look = 8
	seen, dropped := 0, 0
	var first cacheKey
	for k, e := range sh.m {
		if seen == 0 {
			first = k
		}
		if e.st.Expiry <= now+e.offset {
			delete(sh.m, k)
			dropped++
		}
		if seen++; seen == look {
			break
		}
	}
	if dropped == 0 {
		delete(sh.m, first)
	}
}

// clear drops every entry.
func (c *cache) clear() {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		clear(sh.m)
		sh.mu.Unlock()
	}
}

// len returns the number of entries.
func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
