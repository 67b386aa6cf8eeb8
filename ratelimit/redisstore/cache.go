package redisstore

import (
	"sync"
	"unsafe"

	"github.com/floodgate/floodgate/ratelimit"
)

// The over-limit cache remembers, for keys whose last Take was refused,
// the states of that Take's counters as Redis held them, and the server's
// clock at that moment relative to this process's monotonic clock. A
// later Take of the key whose limits are all among the remembered ones
// replays ratelimit.Limit.Take on the remembered states at an estimate of
// the server's clock that is never behind it. If that refuses, Redis
// would too, since it can only hold more events than the snapshot (events
// are only ever added; refused ones are not recorded) and the algorithms
// never admit more when a counter holds more; and as long as no other
// Take reached the key since, the Decision (Limit, Remaining, RetryAfter,
// ResetAfter) is the one Redis would give, up to the estimate below. Once
// the replay admits, the entry is dropped and the Take goes to Redis, as
// does a Take with a limit the entry does not know, and a Take this
// process sees admitted drops its key's entry.
//
// The estimate: a reply carrying server instant S (read with µs
// resolution, so at most 1µs behind) arrives for a request sent at local
// instant L0, so S happened at or after L0 and the server's clock now is
// at most S + 1µs + (now − L0), assuming the two clocks run at the same
// rate. Replaying at that bound makes the durations short by at most one
// round trip, never long, and a refusal never outlives the instant Redis
// would admit.
//
// Entries are kept per key hash in shards, each a mutex and a map
// holding at most its share of Options.CacheSize. A full shard drops the
// entries it finds useless among a few (all their counters empty again)
// or else an arbitrary one: a dropped entry only costs a round trip.

// cacheShards is the number of cache shards.
const cacheShards = 32

// A counterSnap is a counter's State as Redis held it.
type counterSnap struct {
	l  ratelimit.Limit
	st ratelimit.State
}

type cacheEntry struct {
	offset int64 // server time − local time, ns; see above
	snaps  []counterSnap
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
	m  map[keyHash]cacheEntry
}

// newCache returns a cache of about size entries, or nil for size ≤ 0.
func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	c := &cache{perShard: max(1, (size+cacheShards-1)/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[keyHash]cacheEntry)
	}
	return c
}

func (c *cache) shard(h keyHash) *cacheShard { return &c.shards[h[0]%cacheShards] }

// refuse replays the entry of h for a Take of n events under limits at
// local instant now, and returns its Decision if it refuses. It drops the
// entry if it admits.
func (c *cache) refuse(h keyHash, limits []ratelimit.Limit, n, now int64) (ratelimit.Decision, bool) {
	sh := c.shard(h)
	var d ratelimit.Decision
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[h]
	if !ok {
		return d, false
	}
	t := now + e.offset
	for i, l := range limits {
		j := 0
		for j < len(e.snaps) && e.snaps[j].l != l {
			j++
		}
		if j == len(e.snaps) {
			return d, false // a limit the entry does not know: ask Redis
		}
		_, di := l.Take(e.snaps[j].st, t, n)
		d = ratelimit.Combine(d, i, di)
	}
	if d.Allowed {
		delete(sh.m, h) // Redis may admit: ask it
		return d, false
	}
	return d, true
}

// put remembers snaps, the states of h's counters as Redis held them at
// offset + local instant now.
func (c *cache) put(h keyHash, snaps []counterSnap, offset, now int64) {
	sh := c.shard(h)
	sh.mu.Lock()
	if _, ok := sh.m[h]; !ok && len(sh.m) >= c.perShard {
		c.makeRoom(sh, now)
	}
	sh.m[h] = cacheEntry{offset: offset, snaps: snaps}
	sh.mu.Unlock()
}

// drop forgets h's entry.
func (c *cache) drop(h keyHash) {
	sh := c.shard(h)
	sh.mu.Lock()
	if len(sh.m) > 0 {
		delete(sh.m, h)
	}
	sh.mu.Unlock()
}

// makeRoom drops at least one entry of a full shard: those whose counters
// are all empty again among the first few that map iteration (which
// starts at a random place) visits, or else the first one. The caller
// holds sh.mu.
func (c *cache) makeRoom(sh *cacheShard, now int64) {
	const look = 8
	seen, dropped := 0, 0
	var first keyHash
	for h, e := range sh.m {
		if seen == 0 {
			first = h
		}
		empty := true
		for _, sn := range e.snaps {
			empty = empty && sn.st.Expiry <= now+e.offset
		}
		if empty {
			delete(sh.m, h)
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
