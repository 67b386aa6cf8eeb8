package rules

import (
	"hash/maphash"
	"sync"
)

// Inflight counts requests in flight per name, for concurrency caps (rules'
// max_inflight and max_inflight_per_key, routes' max_inflight). One table
// serves a gateway process across reloads, so a reload does not reset the
// count of requests still running. It is safe for concurrent use; the zero
// value is ready.
type Inflight struct {
	seed   maphash.Seed
	once   sync.Once
	shards [32]inflightShard
}

type inflightShard struct {
	mu sync.Mutex
	n  map[string]int64
	_  [40]byte // keep shards on separate cache lines
}

func (t *Inflight) shard(key string) *inflightShard {
	t.once.Do(func() { t.seed = maphash.MakeSeed() })
	return &t.shards[maphash.String(t.seed, key)%uint64(len(t.shards))]
}

// Acquire takes one slot of key if fewer than max are taken, and reports
// whether it did. Every successful Acquire must be followed by Release.
func (t *Inflight) Acquire(key string, max int64) bool {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	if s.n[key] >= max {
		return false
	}
	s.n[key]++
	return true
}

// Release gives back a slot taken by Acquire.
func (t *Inflight) Release(key string) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[key] <= 1 {
		delete(s.n, key)
		return
	}
	s.n[key]--
}

// Count returns the slots of key taken now.
func (t *Inflight) Count(key string) int64 {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[key]
}
