package memory

import (
	"math/bits"
	"math/rand/v2"

	"github.com/floodgate/floodgate/ratelimit"
)

// A table is an open-addressing hash table of counters: 24 bytes a slot,
// no pointers (so the garbage collector never scans it), Robin Hood linear
// probing with backward-shift deletion (so no tombstones), and any
// capacity, not only powers of two (a key's home slot is key×capacity/2⁶⁴),
// so a full shard is sized to its bound: at most 7/8 of its slots are used,
// and growing multiplies the capacity by 1.5, so at least 7/12 of them are
// once it has grown. A table is not safe for concurrent use; its shard's
// lock guards it.
type table struct {
	slots []slot
	n     int       // occupied slots
	rng   *rand.PCG // the random source of a seeded store; nil: math/rand/v2's
}

// A slot holds a counter; key 0 marks an empty slot (counterKey never
// returns 0).
type slot struct {
	key uint64
	st  ratelimit.State
}

// fits reports whether n counters fit in capacity slots.
func fits(n, capacity int) bool { return 8*n <= 7*capacity }

// capacityFor returns the fewest slots that n counters fit in.
func capacityFor(n int) int { return (8*n + 6) / 7 }

// home returns the slot where a search for k starts.
func (t *table) home(k uint64) int {
	hi, _ := bits.Mul64(k, uint64(len(t.slots)))
	return int(hi)
}

// dist returns how far slot i is from the home of the key in it.
func (t *table) dist(i int, k uint64) int {
	d := i - t.home(k)
	if d < 0 {
		d += len(t.slots)
	}
	return d
}

// find returns the slot holding k, or -1.
func (t *table) find(k uint64) int {
	if len(t.slots) == 0 {
		return -1
	}
	i := t.home(k)
	for d := 0; ; d++ {
		s := &t.slots[i]
		if s.key == k {
			return i
		}
		// Robin Hood order: k would be before any key farther from home.
		if s.key == 0 || t.dist(i, s.key) < d {
			return -1
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// insert adds k, which is not in t, with st. The caller makes sure that
// it fits.
func (t *table) insert(k uint64, st ratelimit.State) {
	i, d := t.home(k), 0
	for {
		s := &t.slots[i]
		if s.key == 0 {
			s.key, s.st = k, st
			t.n++
			return
		}
		if sd := t.dist(i, s.key); sd < d { // take the slot; carry its key on
			k, s.key = s.key, k
			st, s.st = s.st, st
			d = sd
		}
		if i++; i == len(t.slots) {
			i = 0
		}
		d++
	}
}

// randomSlot returns a slot chosen at random among the occupied ones. The
// table must not be empty; it is at least an eighth full unless tiny.
func (t *table) randomSlot() int {
	for {
		var r uint64
		if t.rng != nil {
			r = t.rng.Uint64()
		} else {
			r = rand.Uint64()
		}
		hi, _ := bits.Mul64(r, uint64(len(t.slots)))
		if t.slots[hi].key != 0 {
			return int(hi)
		}
	}
}

// removeAt empties slot i, shifting back the keys after it that are away
// from home.
func (t *table) removeAt(i int) {
	for {
		j := i + 1
		if j == len(t.slots) {
			j = 0
		}
		s := &t.slots[j]
		if s.key == 0 || t.dist(j, s.key) == 0 {
			break
		}
		t.slots[i] = *s
		i = j
	}
	t.slots[i] = slot{}
	t.n--
}

// resize moves the counters into a new array of capacity slots, which
// they must fit in.
func (t *table) resize(capacity int) {
	old := t.slots
	t.slots, t.n = make([]slot, capacity), 0
	for _, s := range old {
		if s.key != 0 {
			t.insert(s.key, s.st)
		}
	}
}
