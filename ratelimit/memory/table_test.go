package memory

import (
	"math/rand/v2"
	"testing"

	"github.com/floodgate/floodgate/ratelimit"
)

// check verifies t's invariants: n counts the occupied slots, and every
// key is reachable from its home without passing an empty slot (which,
// with Robin Hood order, is what find relies on).
func (t *table) check(tb testing.TB) {
	tb.Helper()
	n := 0
	for i, s := range t.slots {
		if s.key == 0 {
			continue
		}
		n++
		for j, d := t.home(s.key), 0; j != i; d++ {
			if t.slots[j].key == 0 {
				tb.Fatalf("key %#x at %d: empty slot %d between it and its home %d", s.key, i, j, t.home(s.key))
			}
			if j++; j == len(t.slots) {
				j = 0
			}
		}
		if prev := (i + len(t.slots) - 1) % len(t.slots); t.slots[prev].key != 0 && t.dist(prev, t.slots[prev].key)+1 < t.dist(i, s.key) {
			tb.Fatalf("slot %d is %d from home after slot %d at %d: not in Robin Hood order", i, t.dist(i, s.key), prev, t.dist(prev, t.slots[prev].key))
		}
	}
	if n != t.n {
		tb.Fatalf("n = %d, but %d slots are occupied", t.n, n)
	}
}

// TestTableAgainstMap applies random inserts, updates, removals and
// resizes to a table and a Go map, and checks that they agree.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for run := range 200 {
		var tb table
		want := map[uint64]ratelimit.State{}
		keyspace := uint64(1 + rng.IntN(500))
		key := func() uint64 {
			if rng.IntN(4) == 0 {
				return rng.Uint64() | 1 // anywhere
			}
			return 1 + rng.Uint64N(keyspace)<<(rng.IntN(2)*50) // clustered homes
		}
		for op := range 2000 {
			k := key()
			i := tb.find(k)
			got, ok := want[k]
			if (i >= 0) != ok || ok && tb.slots[i].st != got {
				t.Fatalf("run %d op %d: find(%#x) = %d, map has %v, %+v", run, op, k, i, ok, got)
			}
			switch r := rng.IntN(100); {
			case r < 50 && !ok:
				if !fits(tb.n+1, len(tb.slots)) {
					tb.resize(max(len(tb.slots)*3/2, minSlots))
				}
				st := ratelimit.State{Expiry: rng.Int64(), Data: rng.Uint64()}
				tb.insert(k, st)
				want[k] = st
			case r < 70 && ok:
				st := ratelimit.State{Expiry: rng.Int64()}
				tb.slots[i].st = st
				want[k] = st
			case r < 98 && ok:
				tb.removeAt(i)
				delete(want, k)
			case r >= 98 && len(tb.slots) > 0:
				tb.resize(max(capacityFor(tb.n), len(tb.slots)+rng.IntN(7)-3, 1))
			}
			if op%401 == 0 {
				tb.check(t)
			}
		}
		tb.check(t)
		for k, st := range want {
			if i := tb.find(k); i < 0 || tb.slots[i].st != st {
				t.Fatalf("run %d: find(%#x) = %d, want %+v", run, k, i, st)
			}
		}
	}
}

func TestCapacity(t *testing.T) {
	for n := range 2000 {
		c := capacityFor(n)
		if !fits(n, c) || n > 0 && fits(n, c-1) {
			t.Fatalf("capacityFor(%d) = %d, not the fewest slots that fit", n, c)
		}
	}
}
