package redisstore

import (
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

// encodeState is the inverse of decodeState: the counter's value in Redis.
func encodeState(a ratelimit.Algorithm, st ratelimit.State) string {
	var b []byte
	switch a {
	case ratelimit.GCRA:
		b = appendNumbers(b, float64(st.Expiry/1000), float64(st.Expiry%1000), float64(int64(st.Data)/1000))
	case ratelimit.FixedWindow:
		b = appendNumbers(b, float64(st.Expiry/1000), float64(st.Data), 0)
	default:
		b = appendNumbers(b, float64(st.Expiry/1000), float64(st.Data>>32), float64(st.Data&(1<<32-1)))
	}
	return string(b)
}

// randomLimit returns a valid limit, often with the extremes the script's
// arithmetic must handle: windows up to 366 days, counts up to 2³²−1 for
// windows and up to one per nanosecond for GCRA (emission intervals that
// are not whole microseconds).
func randomLimit(rng *rand.Rand) ratelimit.Limit {
	windows := []time.Duration{time.Millisecond, 7 * time.Millisecond, time.Second, 3 * time.Second, time.Minute,
		5 * time.Minute, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, ratelimit.MaxWindow,
		time.Duration(1+rng.Int64N(int64(ratelimit.MaxWindow/time.Millisecond))) * time.Millisecond}
	l := ratelimit.Limit{Window: windows[rng.IntN(len(windows))], Algorithm: ratelimit.Algorithm(rng.IntN(3))}
	maxCount := int64(ratelimit.MaxWindowCount)
	if l.Algorithm == ratelimit.GCRA {
		maxCount = int64(l.Window)
	}
	counts := []int64{1, 2, 3, 7, 100, 1500, maxCount, maxCount / 3, 1 + rng.Int64N(maxCount), 1 + rng.Int64N(min(maxCount, 1000))}
	l.Count = min(counts[rng.IntN(len(counts))], maxCount)
	return l
}

// randomState returns a state of a counter under l near the instant now
// (ns, a whole µs): empty, full, partly used, expired, or from a clock
// ahead by up to three windows; always one the script can store.
func randomState(rng *rand.Rand, l ratelimit.Limit, now int64) ratelimit.State {
	w := int64(l.Window)
	if rng.IntN(6) == 0 {
		return ratelimit.State{}
	}
	count := func() uint64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return uint64(l.Count)
		case 2: // past the limit, as after a Charge
			return uint64(min(l.Count+rng.Int64N(l.Count+1), ratelimit.MaxWindowCount))
		}
		return uint64(rng.Int64N(l.Count + 1))
	}
	us := func(t int64) int64 { return max(t-t%1000, 0) }
	switch l.Algorithm {
	case ratelimit.GCRA:
		tat := max(now+rng.Int64N(4*w)-2*w, 0)
		if rng.IntN(3) == 0 {
			tat = now + w/l.Count*rng.Int64N(l.Count+1) // on the emission grid
		}
		last := us(now + rng.Int64N(5*w) - 3*w)
		if rng.IntN(2) == 0 {
			last = us(now - rng.Int64N(min(w, now)))
		}
		return ratelimit.State{Expiry: tat, Data: uint64(last)}
	case ratelimit.FixedWindow:
		end := now - now%w + w*(rng.Int64N(6)-2)
		if rng.IntN(4) == 0 {
			end = us(now + rng.Int64N(6*w) - 3*w)
		}
		return ratelimit.State{Expiry: max(end, 0), Data: count()}
	default:
		exp := now - now%w + w*(rng.Int64N(7)-2)
		if rng.IntN(4) == 0 {
			exp = us(now + rng.Int64N(8*w) - 4*w)
		}
		return ratelimit.State{Expiry: max(exp, 0), Data: count()<<32 | count()}
	}
}

// TestScriptAgainstAlgorithm checks the Lua port against ratelimit.Limit.Take
// on random states, limits and n: the script must admit exactly when the
// algorithm does, on the state it read and at the instant it read, and
// store exactly the State the algorithm returns, with an expiry at its
// Expiry.
func TestScriptAgainstAlgorithm(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, CacheSize: -1})
	c := *s.client.Load()
	rng := rand.New(rand.NewPCG(4, uint64(time.Now().UnixNano())))
	rounds := 3000
	if testing.Short() {
		rounds = 300
	}
	var admitted, refused, moved, charged int
	for i := range rounds {
		limits := make([]ratelimit.Limit, 1+rng.IntN(3))
		for j := range limits {
			limits[j] = randomLimit(rng)
		}
		if len(limits) > 1 && rng.IntN(4) == 0 {
			limits[1] = limits[0] // a repeated limit is one counter
		}
		minCount := limits[0].Count
		for _, l := range limits {
			minCount = min(minCount, l.Count)
		}
		ns := []int64{0, 1, 2, minCount, minCount + 1, 1 + rng.Int64N(minCount), 1 << 50, 1 + rng.Int64N(1<<62)}
		n := ns[rng.IntN(len(ns))]

		h := s.hash.sum("diff/" + strconv.Itoa(i))
		charge := rng.IntN(3) == 0
		if charge {
			charged++
		}
		r := s.newCall(h, n, limits, charge)
		now := time.Now().UnixMicro() * 1000
		written := make([]string, len(r.counters))
		for j, l := range r.counters {
			st := randomState(rng, l, now)
			if st == (ratelimit.State{}) {
				continue
			}
			written[j] = encodeState(l.Algorithm, st)
			if err := c.Do(ctx, c.B().Set().Key(r.keys[j]).Value(written[j]).Px(time.Hour).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}

		s.exec(ctx, c, []*call{r})
		if r.err != nil {
			t.Fatalf("round %d: exec(n=%d, %v): %v", i, n, limits, r.err)
		}
		rep := r.rep
		var d ratelimit.Decision
		for j, l := range limits {
			_, dj := l.Take(rep.states[r.uniq[j]], rep.now, n)
			if charge {
				_, dj = l.Charge(rep.states[r.uniq[j]], rep.now, n)
			}
			d = ratelimit.Combine(d, j, dj)
		}
		if rep.admitted {
			admitted++
		} else {
			refused++
		}
		if d.Allowed != rep.admitted {
			t.Errorf("round %d: charge=%v n=%d, %v on %+v at %d: script admitted %v, algorithm %+v", i, charge, n, limits, rep.states, rep.now, rep.admitted, d)
		}
		for j, l := range r.counters {
			got := ""
			if written[j] != "" {
				got = encodeState(l.Algorithm, rep.states[j])
			}
			if got != written[j] {
				t.Fatalf("round %d: counter %v: script read %q, wrote %q before", i, l, got, written[j])
			}
			next, _ := l.Take(rep.states[j], rep.now, 0)
			if next != rep.states[j] {
				moved++ // the clock went back more than a window
			}
			if charge {
				next, _ = l.Charge(rep.states[j], rep.now, n)
			} else if rep.admitted {
				next, _ = l.Take(rep.states[j], rep.now, n)
			}
			stored, err := c.Do(ctx, c.B().Get().Key(r.keys[j]).Build()).ToString()
			if rueidis.IsRedisNil(err) {
				stored, err = "", nil
			}
			if err != nil {
				t.Fatal(err)
			}
			pttl, err := c.Do(ctx, c.B().Pttl().Key(r.keys[j]).Build()).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			want := written[j]
			switch {
			case charge && stored == "" && next.Expiry-rep.now < int64(time.Second):
				want = "" // a charge writes its counters with their own expiry, which came before the test read it
			case next == rep.states[j]:
			case next.Expiry <= rep.now:
				want = "" // empty again: deleted
			case stored == "" && next.Expiry-rep.now < int64(time.Second):
				want = "" // expired before the test read it
			default:
				want = encodeState(l.Algorithm, next)
				maxTTL := (next.Expiry - rep.now + int64(time.Millisecond) - 1) / int64(time.Millisecond)
				if short := next.Expiry-rep.now < int64(time.Second); pttl == -1 || pttl > maxTTL || pttl == -2 && !short {
					t.Errorf("round %d: counter %v: PTTL %d ms, want in [0, %d]", i, l, pttl, maxTTL)
				}
			}
			if stored != want {
				t.Errorf("round %d: charge=%v n=%d, %v admitted=%v: counter %v from %q at %d holds %q, want %q (%+v)",
					i, charge, n, limits, rep.admitted, l, written[j], rep.now, stored, want, next)
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d rounds: %d admitted, %d refused, %d charges, %d counters moved by a clock step back", rounds, admitted, refused, charged, moved)
	if admitted < rounds/5 || refused < rounds/5 || moved < rounds/50 {
		t.Errorf("the random cases cover too little: want at least a fifth admitted, a fifth refused, a fiftieth moved")
	}
}

// TestScriptBatch runs batches of Takes, several of them on the same
// keys, through one script run, and checks that each Take saw the
// counters as the Takes before it in the batch left them, and decided as
// the algorithm does.
func TestScriptBatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}, CacheSize: -1})
	c := *s.client.Load()
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	for round := range 200 {
		keys := []string{"batch/a/" + strconv.Itoa(round), "batch/b/" + strconv.Itoa(round)}
		pool := []ratelimit.Limit{
			{Count: 3, Window: time.Hour, Algorithm: ratelimit.SlidingWindow},
			{Count: 4, Window: time.Minute, Algorithm: ratelimit.GCRA},
			{Count: 5, Window: time.Second, Algorithm: ratelimit.FixedWindow},
			{Count: 7, Window: 3 * time.Second, Algorithm: ratelimit.GCRA},
		}
		var calls []*call
		for range 1 + rng.IntN(maxBatch) {
			limits := []ratelimit.Limit{pool[rng.IntN(len(pool))]}
			if rng.IntN(2) == 0 {
				limits = append(limits, pool[rng.IntN(len(pool))])
			}
			n := int64(rng.IntN(3))
			if rng.IntN(4) == 0 {
				n = int64(rng.IntN(12)) // often more than the limits
			}
			calls = append(calls, s.newCall(s.hash.sum(keys[rng.IntN(2)]), n, limits, rng.IntN(3) == 0))
		}
		s.exec(ctx, c, calls)
		// Replay in Go: the first Take on a counter saw it as the batch
		// found it; each later one as the Takes before it left it.
		states := map[string]ratelimit.State{}
		for i, cl := range calls {
			if cl.err != nil {
				t.Fatalf("round %d: exec: %v", round, cl.err)
			}
			if cl.rep.now != calls[0].rep.now {
				t.Errorf("round %d: Take %d at %d, Take 0 at %d: want one instant per batch", round, i, cl.rep.now, calls[0].rep.now)
			}
			admit := true
			for j, l := range cl.counters {
				st, ok := states[cl.keys[j]]
				if !ok {
					st = cl.rep.states[j]
				}
				if st != cl.rep.states[j] {
					t.Fatalf("round %d: Take %d read %+v from %s, want %+v as the Takes before it left it", round, i, cl.rep.states[j], cl.keys[j], st)
				}
				_, d := l.Take(st, cl.rep.now, cl.n)
				admit = admit && d.Allowed
			}
			if admit != cl.rep.admitted {
				t.Fatalf("round %d: Take %d (n=%d, %v) admitted %v, want %v", round, i, cl.n, cl.counters, cl.rep.admitted, admit)
			}
			for j, l := range cl.counters {
				m := cl.n
				switch {
				case cl.charge:
					states[cl.keys[j]], _ = l.Charge(cl.rep.states[j], cl.rep.now, m)
					continue
				case !admit:
					m = 0
				}
				states[cl.keys[j]], _ = l.Take(cl.rep.states[j], cl.rep.now, m)
			}
		}
	}
}

// TestScriptMulLE checks the script's exact comparison of products
// a×b ≤ c×d, whose products can exceed 2⁵³, against math/big.
func TestScriptMulLE(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s := newStore(t, Options{Addrs: []string{srv.Addr()}})
	c := *s.client.Load()
	script := `
local r = {}
for i = 1, #ARGV, 4 do
  local fits
  local pa, pb, qa, qb = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
` + luaMulLE + `
  r[#r + 1] = fits and 1 or 0
end
return r`
	const maxA, maxB = 1<<32 - 1, int64(ratelimit.MaxWindow / time.Microsecond)
	rng := rand.New(rand.NewPCG(5, 6))
	var quads [][4]int64
	add := func(a, b, c, d int64) { quads = append(quads, [4]int64{a, b, c, d}) }
	for range 4000 {
		a, b := rng.Int64N(maxA+1), rng.Int64N(maxB+1)
		switch rng.IntN(4) {
		case 0: // c×d = a×b exactly, or one off
			if a > 0 && b > 0 {
				g := gcd(a, b)
				add(a, b, a/g, b*g)
				add(a, b, a, b-1)
				add(a, b-1, a, b)
			}
		case 1: // products just around 2⁵³
			b = (1<<53)/max(a, 1) + rng.Int64N(3) - 1
			add(a, min(b, maxB), rng.Int64N(maxA+1), rng.Int64N(maxB+1))
		default:
			add(a, b, rng.Int64N(maxA+1), rng.Int64N(maxB+1))
		}
	}
	add(maxA, maxB, maxA, maxB)
	add(maxA, maxB-1, maxA, maxB)
	add(maxA, maxB, maxA-1, maxB)
	add(0, 0, 0, 0)
	for start := 0; start < len(quads); start += 500 {
		batch := quads[start:min(start+500, len(quads))]
		args := make([]string, 0, 4*len(batch))
		for _, q := range batch {
			for _, v := range q {
				args = append(args, strconv.FormatInt(v, 10))
			}
		}
		got, err := c.Do(ctx, c.B().Eval().Script(script).Numkeys(0).Arg(args...).Build()).AsIntSlice()
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range batch {
			p := new(big.Int).Mul(big.NewInt(q[0]), big.NewInt(q[1]))
			r := new(big.Int).Mul(big.NewInt(q[2]), big.NewInt(q[3]))
			if want := p.Cmp(r) <= 0; (got[i] == 1) != want {
				t.Errorf("%d×%d ≤ %d×%d: script says %v, want %v", q[0], q[1], q[2], q[3], got[i] == 1, want)
			}
		}
	}
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
