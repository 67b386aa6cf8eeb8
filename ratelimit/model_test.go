package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// A model is a second, deliberately naive implementation of an algorithm
// that Take is checked against on random event sequences. Instants only
// move forward.
type model interface {
	// take reports whether n events fit at t and records them if so, and
	// the room left after.
	take(t, n int64) (allowed bool, remaining int64)
	// charge records n events at t whether or not they fit, as
	// Limit.Charge documents: the count goes past the limit by at most
	// the limit.
	charge(t, n int64)
}

// windowModel keeps every aligned window's count (FixedWindow and
// SlidingWindow).
type windowModel struct {
	c, w    int64
	sliding bool
	counts  map[int64]int64 // window index → events admitted in it
}

func (m *windowModel) take(t, n int64) (bool, int64) {
	i, e := t/m.w, t%m.w
	curr, prev := m.counts[i], int64(0)
	// used×w is the weighted count, kept as a fraction over w.
	usedW := curr * m.w
	if m.sliding {
		prev = m.counts[i-1]
		usedW += prev * (m.w - e)
	}
	room := func(usedW int64) int64 { // ⌊(c×w − usedW)/w⌋
		if r := m.c*m.w - usedW; r > 0 {
			return r / m.w
		}
		return 0
	}
	if usedW+n*m.w > m.c*m.w {
		return false, room(usedW)
	}
	m.counts[i] += n
	return true, room(usedW + n*m.w)
}

func (m *windowModel) charge(t, n int64) {
	i := t / m.w
	curr := m.counts[i]
	m.counts[i] = max(curr, min(curr+min(n, 2*m.c), 2*m.c))
}

// bucketModel is a token bucket whose level is kept in nanoseconds of
// refill: full at c×T, one token is T.
type bucketModel struct {
	T, full int64
	level   int64
	last    int64
}

func (m *bucketModel) take(t, n int64) (bool, int64) {
	m.level = min(m.full, m.level+(t-m.last))
	m.last = t
	if n*m.T > m.level {
		return false, max(m.level, 0) / m.T
	}
	m.level -= n * m.T
	return true, m.level / m.T
}

// charge lets the level go below empty, down to minus a full bucket.
func (m *bucketModel) charge(t, n int64) {
	m.level = min(m.full, m.level+(t-m.last))
	m.last = t
	m.level = min(m.level, max(m.level-min(n, 2*m.full/m.T)*m.T, -m.full))
}

func newModel(l Limit) model {
	w, c := int64(l.Window), l.Count
	if l.Algorithm == GCRA {
		T := w / c
		return &bucketModel{T: T, full: c * T, level: c * T}
	}
	return &windowModel{c: c, w: w, sliding: l.Algorithm == SlidingWindow, counts: map[int64]int64{}}
}

// runs returns n, or a tenth of it in -short mode.
func runs(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// TestTakeAgainstModel drives Take and a model with the same random
// events, and checks on every step that they agree, that a refusal's
// RetryAfter is exact (the same Take passes after exactly that wait, not
// a nanosecond earlier), and the bound each algorithm documents on any
// interval.
func TestTakeAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range runs(3000) {
		l := Limit{
			Count:     1 + rng.Int64N(12),
			Window:    time.Duration(1 + rng.Int64N(400)),
			Algorithm: Algorithm(rng.IntN(3)),
		}
		if l.Algorithm == GCRA && int64(l.Window) < l.Count {
			l.Window = time.Duration(l.Count)
		}
		checkAgainstModel(t, rng, fmt.Sprintf("run %d %v %v", run, l, l.Algorithm), l)
	}
}

func checkAgainstModel(t *testing.T, rng *rand.Rand, name string, l Limit) {
	t.Helper()
	w, c := int64(l.Window), l.Count
	m := newModel(l)
	now := rng.Int64N(1000) * w // aligned or not, below
	if rng.IntN(2) == 0 {
		now += rng.Int64N(w)
	}
	var s State
	var admitted []int64 // instant of every admitted event
	for i := range 200 {
		switch rng.IntN(4) {
		case 0: // same instant
		case 1:
			now += rng.Int64N(w/4 + 1)
		case 2:
			now += rng.Int64N(2*w + 1)
		default:
			now += rng.Int64N(3) // around boundaries
		}
		n := rng.Int64N(c + 2) // sometimes 0, sometimes more than c
		before := s
		if rng.IntN(8) == 0 {
			s = checkCharge(t, rng, name, i, l, m, s, now)
			continue
		}
		s2, d := l.Take(s, now, n)
		wantAllowed, wantRemaining := m.take(now, n)
		if n == 0 {
			wantAllowed = true
		}
		if d.Allowed != wantAllowed || d.Remaining != wantRemaining {
			t.Fatalf("%s step %d: Take(%+v, %d, %d) = %+v, model says allowed=%v remaining=%d", name, i, before, now, n, d, wantAllowed, wantRemaining)
		}
		if !d.Allowed || n == 0 {
			if s2 != before {
				t.Fatalf("%s step %d: Take(%+v, %d, %d) = %+v, %+v: changed the state without recording", name, i, before, now, n, s2, d)
			}
		}
		if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.ResetAfter < 0 || d.ResetAfter > 2*l.Window {
			t.Fatalf("%s step %d: Take(%+v, %d, %d) = %+v: inconsistent durations", name, i, before, now, n, d)
		}
		if !d.Allowed && n <= c {
			ra := int64(d.RetryAfter)
			if _, later := l.Take(s, now+ra, n); !later.Allowed {
				t.Fatalf("%s step %d: refused with RetryAfter %d, but Take(%+v, %d, %d) = %+v", name, i, ra, s, now+ra, n, later)
			}
			if _, early := l.Take(s, now+ra-1, n); early.Allowed {
				t.Fatalf("%s step %d: refused with RetryAfter %d, but 1ns earlier Take(%+v, %d, %d) = %+v", name, i, ra, s, now+ra-1, n, early)
			}
		}
		if d.Allowed && n > 0 && s2.Expiry <= now {
			t.Fatalf("%s step %d: Take(%+v, %d, %d) recorded %d events in %+v, which has already expired", name, i, before, now, n, n, s2)
		}
		s = s2
		if d.Allowed {
			for range n {
				admitted = append(admitted, now)
			}
		}
	}
	checkBounds(t, name, l, admitted)
}

// checkCharge makes a Charge of up to three times the limit on s at now,
// checks it against m's, and that its RetryAfter is the exact wait for
// one event; it returns the new State.
func checkCharge(t *testing.T, rng *rand.Rand, name string, i int, l Limit, m model, s State, now int64) State {
	t.Helper()
	n := rng.Int64N(3*l.Count + 1)
	fits, _ := m.take(now, n) // records n if they fit: then charge adds nothing
	if !fits {
		m.charge(now, n)
	}
	s2, d := l.Charge(s, now, n)
	if d.Allowed != (fits || n == 0) {
		t.Fatalf("%s step %d: Charge(%+v, %d, %d) = %+v, model says fits=%v", name, i, s, now, n, d, fits)
	}
	if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.ResetAfter < 0 || d.ResetAfter > 2*l.Window {
		t.Fatalf("%s step %d: Charge(%+v, %d, %d) = %+v: inconsistent durations", name, i, s, now, n, d)
	}
	if !d.Allowed {
		if d.Remaining != 0 {
			t.Fatalf("%s step %d: Charge(%+v, %d, %d) = %+v: in debt with something remaining", name, i, s, now, n, d)
		}
		ra := int64(d.RetryAfter)
		if _, later := l.Take(s2, now+ra, 1); !later.Allowed {
			t.Fatalf("%s step %d: charged with RetryAfter %d, but Take(%+v, %d, 1) = %+v", name, i, ra, s2, now+ra, later)
		}
		if _, early := l.Take(s2, now+ra-1, 1); early.Allowed {
			t.Fatalf("%s step %d: charged with RetryAfter %d, but 1ns earlier Take(%+v, %d, 1) = %+v", name, i, ra, s2, now+ra-1, early)
		}
	}
	return s2
}

// checkBounds checks the documented most events in any interval.
func checkBounds(t *testing.T, name string, l Limit, admitted []int64) {
	t.Helper()
	w, c := int64(l.Window), l.Count
	for i, ti := range admitted {
		for j := i; j < len(admitted); j++ {
			tj := admitted[j]
			count := int64(j - i + 1)
			switch l.Algorithm {
			case GCRA:
				if T := w / c; count > c+(tj-ti)/T {
					t.Fatalf("%s: GCRA admitted %d events within %dns (T=%d)", name, count, tj-ti, T)
				}
			case SlidingWindow:
				if tj-ti < w && count > 2*c-1 {
					t.Fatalf("%s: sliding window admitted %d events within %dns", name, count, tj-ti)
				}
				fallthrough
			case FixedWindow:
				if ti/w == tj/w && count > c {
					t.Fatalf("%s: %v admitted %d events in one window", name, l.Algorithm, count)
				}
				if tj-ti < w && count > 2*c {
					t.Fatalf("%s: %v admitted %d events within %dns", name, l.Algorithm, count, tj-ti)
				}
			}
		}
	}
}

// TestTakeClockBack steps random sequences on a clock that lags (each
// reading up to one Window behind the latest) and is sometimes set back by
// more than a Window, and checks that Take never admits more than the
// limit allows on a clock that pauses instead of going back: one that
// moves forward as much as the readings do, and never back.
func TestTakeClockBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range runs(2000) {
		l := Limit{
			Count:     1 + rng.Int64N(12),
			Window:    time.Duration(1 + rng.Int64N(400)),
			Algorithm: Algorithm(rng.IntN(3)),
		}
		if l.Algorithm == GCRA && int64(l.Window) < l.Count {
			l.Window = time.Duration(l.Count)
		}
		w, c := int64(l.Window), l.Count
		var s State
		latest := 200*w + rng.Int64N(1000)*w
		now, paused := latest, latest
		var admitted []int64 // on the paused clock
		for i := range 300 {
			switch rng.IntN(30) {
			case 0: // set back by more than a window
				latest = max(latest-2*w-rng.Int64N(100*w), 0)
			default:
				latest += rng.Int64N(w/2 + 1)
			}
			prev := now
			now = latest
			if rng.IntN(2) == 0 {
				now = max(now-rng.Int64N(w+1), 0) // lags
			}
			paused += max(now-prev, 0)
			n := rng.Int64N(c + 1)
			s2, d := l.Take(s, now, n)
			if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.RetryAfter > 3*l.Window || d.ResetAfter < 0 || d.ResetAfter > 3*l.Window || d.Remaining < 0 || d.Remaining > c {
				t.Fatalf("run %d step %d: Take(%+v, %d, %d) = %+v: out of range", run, i, s, now, n, d)
			}
			if !d.Allowed && n <= c {
				if _, later := l.Take(s2, now+int64(d.RetryAfter), n); !later.Allowed {
					t.Fatalf("run %d step %d: RetryAfter %v, but Take(%+v, %d, %d) = %+v", run, i, d.RetryAfter, s2, now+int64(d.RetryAfter), n, later)
				}
			}
			s = s2
			if d.Allowed {
				for range n {
					admitted = append(admitted, paused)
				}
			}
		}
		checkPausedBounds(t, l, admitted)
	}
}

// checkPausedBounds checks the bounds that hold on a clock that paused
// while the real one went back (windows restart there, so only the coarse
// 2×Count within a Window holds for them). admitted is sorted.
func checkPausedBounds(t *testing.T, l Limit, admitted []int64) {
	t.Helper()
	w, c := int64(l.Window), l.Count
	for i, ti := range admitted {
		for j := i; j < len(admitted); j++ {
			count, span := int64(j-i+1), admitted[j]-ti
			if l.Algorithm != GCRA {
				if span >= w {
					break
				}
				if count > 2*c {
					t.Fatalf("%v %v: %d events within %dns of paused clock", l, l.Algorithm, count, span)
				}
				continue
			}
			most := c + span/(w/c)
			if count > most {
				t.Fatalf("%v GCRA: %d events within %dns of paused clock", l, count, span)
			}
			if most >= int64(len(admitted)-i) {
				break // no later j can exceed it
			}
		}
	}
}

// FuzzTake checks that Take never panics and keeps its Decision within
// its documented ranges for any limit, State, instant and n. It is
// seeded from stepTests.
func FuzzTake(f *testing.F) {
	t0 := noon.UnixNano()
	for _, tt := range stepTests {
		var s State
		for _, st := range tt.steps {
			f.Add(uint8(tt.limit.Algorithm), tt.limit.Count, int64(tt.limit.Window), s.Expiry, s.Data, t0+int64(st.at), st.n)
			s, _ = tt.limit.Take(s, t0+int64(st.at), st.n)
		}
	}
	f.Add(uint8(0), int64(0), int64(0), int64(-1), uint64(1<<64-1), int64(-1<<63), int64(-1))
	f.Add(uint8(1), int64(1<<62), int64(1<<62), int64(1<<63-1), uint64(0), int64(1<<63-1), int64(1<<63-1))
	f.Add(uint8(1), int64(1000), int64(time.Second), int64(1<<63-1), uint64(1<<64-1), int64(1<<62), int64(1))
	f.Add(uint8(2), int64(1000), int64(time.Second), int64(1<<63-1), uint64(1<<64-1), int64(1<<62), int64(1))
	f.Fuzz(func(t *testing.T, algo uint8, count, window, expiry int64, data uint64, now, n int64) {
		l := Limit{Count: count, Window: time.Duration(window), Algorithm: Algorithm(algo)}
		s := State{Expiry: expiry, Data: data}
		s2, d := l.Take(s, now, n)
		if !l.valid() {
			if s2 != s || d != (Decision{}) {
				t.Fatalf("invalid %+v: Take = %+v, %+v, want s and zero", l, s2, d)
			}
			return
		}
		if d.Remaining < 0 || d.Remaining > l.Count || d.RetryAfter < 0 || d.RetryAfter > 3*l.Window ||
			d.ResetAfter < 0 || d.ResetAfter > 3*l.Window || d.Allowed != (d.RetryAfter == 0) || d.Limit != 0 {
			t.Fatalf("Take(%+v, %d, %d) under %+v = %+v: out of range", s, now, n, l, d)
		}
		if n <= 0 && !d.Allowed {
			t.Fatalf("Take(%+v, %d, %d) under %+v = %+v: a peek was refused", s, now, n, l, d)
		}
		if d.Allowed && n > 0 && s2.Expiry <= min(max(now, 0), maxTime) {
			t.Fatalf("Take(%+v, %d, %d) under %+v = %+v: recorded into an expired State", s, now, n, l, s2)
		}
	})
}
