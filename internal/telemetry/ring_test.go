package telemetry

import (
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
)

// fakeClock is a clock that tests step by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// totals returns each rule's totals from h, by name.
func totals(h History) map[string][rules.NumOutcomes]uint64 {
	out := map[string][rules.NumOutcomes]uint64{}
	for _, r := range h.Rules {
		out[r.Rule] = r.Total
	}
	return out
}

func TestRingCountsByRuleAndDecision(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	rr := r.ForRules([]string{"shadow-requests", "rate-limit-ip"})
	for range 3 {
		rr.Add(0, rules.Allowed)
	}
	rr.Add(0, rules.WouldBlock)
	rr.Add(1, rules.Blocked)
	rr.Add(1, rules.Blocked)
	rr.Add(1, rules.Denied)
	rr.Add(7, rules.Blocked)                // no such rule: ignored
	rr.Add(0, rules.Outcome(9))             // no such outcome: ignored
	(*RingRules)(nil).Add(0, rules.Blocked) // the nil recorder records nothing

	h := r.Snapshot()
	want := map[string][rules.NumOutcomes]uint64{
		"shadow-requests": {rules.Allowed: 3, rules.WouldBlock: 1},
		"rate-limit-ip":   {rules.Blocked: 2, rules.Denied: 1},
	}
	if diff := cmp.Diff(totals(h), want); diff != "" {
		t.Errorf("Snapshot totals (-got +want):\n%s", diff)
	}
	if got, want := h.End, t0.Add(RingBucket); !got.Equal(want) {
		t.Errorf("End = %v, want %v", got, want)
	}
	for _, rh := range h.Rules {
		if len(rh.Buckets) != RingBuckets {
			t.Fatalf("%s: %d buckets, want %d", rh.Rule, len(rh.Buckets), RingBuckets)
		}
		if last := rh.Buckets[RingBuckets-1]; last != rh.Total {
			t.Errorf("%s: newest bucket %v, want every count %v", rh.Rule, last, rh.Total)
		}
	}
}

// TestRingBuckets steps through fixed instants and checks where each count
// lands and when it leaves the window.
func TestRingBuckets(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	rr := r.ForRules([]string{"a"})
	rr.AddAt(t0, 0, rules.Blocked)                             // bucket 0
	rr.AddAt(t0.Add(9999*time.Millisecond), 0, rules.Blocked)  // still bucket 0
	rr.AddAt(t0.Add(10*time.Second), 0, rules.WouldBlock)      // bucket 1
	rr.AddAt(t0.Add(35*time.Second), 0, rules.Allowed)         // bucket 3
	rr.AddAt(t0.Add(-20*time.Second), 0, rules.Denied)         // bucket -2: before start, inside the window
	rr.AddAt(t0.Add(-RingWindow-time.Second), 0, rules.Denied) // older than the window: ignored
	h := r.SnapshotAt(t0.Add(35 * time.Second))

	b := h.Rules[0].Buckets
	check := func(ago int, want [rules.NumOutcomes]uint64) {
		t.Helper()
		if got := b[RingBuckets-1-ago]; got != want {
			t.Errorf("bucket %d ago = %v, want %v", ago, got, want)
		}
	}
	check(0, [rules.NumOutcomes]uint64{rules.Allowed: 1})
	check(1, [rules.NumOutcomes]uint64{})
	check(2, [rules.NumOutcomes]uint64{rules.WouldBlock: 1})
	check(3, [rules.NumOutcomes]uint64{rules.Blocked: 2})
	check(5, [rules.NumOutcomes]uint64{rules.Denied: 1})
	if want := ([rules.NumOutcomes]uint64{1, 2, 1, 1}); h.Rules[0].Total != want {
		t.Errorf("Total = %v, want %v", h.Rules[0].Total, want)
	}

	// An hour later, bucket 0 and the one before start have left the
	// window; bucket 1 (10 s) is the oldest kept.
	h = r.SnapshotAt(t0.Add(RingWindow))
	if want := ([rules.NumOutcomes]uint64{rules.Allowed: 1, rules.WouldBlock: 1}); h.Rules[0].Total != want {
		t.Errorf("after an hour: Total = %v, want %v", h.Rules[0].Total, want)
	}
	if got := h.Rules[0].Buckets[0]; got != ([rules.NumOutcomes]uint64{rules.WouldBlock: 1}) {
		t.Errorf("after an hour: oldest bucket = %v, want the would_block of 10 s", got)
	}

	// A late reading (older than the newest bucket, inside the window)
	// still counts, in its own bucket.
	rr.AddAt(t0.Add(40*time.Second), 0, rules.Blocked)
	if h := r.SnapshotAt(t0.Add(RingWindow)); h.Rules[0].Total[rules.Blocked] != 1 {
		t.Errorf("late reading: blocked = %d, want 1", h.Rules[0].Total[rules.Blocked])
	}

	// A long silence empties the ring.
	h = r.SnapshotAt(t0.Add(5 * RingWindow))
	if h.Rules[0].Total != ([rules.NumOutcomes]uint64{}) {
		t.Errorf("after five hours of silence: Total = %v, want zero", h.Rules[0].Total)
	}
	// A snapshot for an instant older than the newest bucket shows the
	// newest window: the ring never goes back.
	if h2 := r.SnapshotAt(t0); !h2.End.Equal(h.End) {
		t.Errorf("SnapshotAt(past).End = %v, want %v", h2.End, h.End)
	}
}

// TestRingAcrossReloads: a rule keeps its history under a new rule set,
// in whatever position; a removed rule keeps its row while there is room.
func TestRingAcrossReloads(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	old := r.ForRules([]string{"a", "b"})
	old.Add(0, rules.Blocked)
	old.Add(1, rules.WouldBlock)
	clk.Advance(time.Minute)
	cur := r.ForRules([]string{"c", "a"}) // b removed, c added, a moved
	cur.Add(1, rules.Blocked)
	cur.Add(0, rules.Allowed)
	old.Add(0, rules.Blocked) // a request still finishing on the old rules
	want := map[string][rules.NumOutcomes]uint64{
		"a": {rules.Blocked: 3},
		"b": {rules.WouldBlock: 1},
		"c": {rules.Allowed: 1},
	}
	if diff := cmp.Diff(totals(r.Snapshot()), want); diff != "" {
		t.Errorf("after a reload (-got +want):\n%s", diff)
	}
}

// candidates returns each rule's candidates' totals from h, by "rule
// limit".
func candidates(h History) map[string][rules.NumOutcomes]uint64 {
	out := map[string][rules.NumOutcomes]uint64{}
	for _, r := range h.Rules {
		for _, c := range r.Candidates {
			out[r.Rule+" "+c.Limit] = c.Total
		}
	}
	return out
}

// TestRingCandidates: a rule's candidate limits are counted next to it,
// allowed and would_block, in the same buckets, and leave the window with
// them.
func TestRingCandidates(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	rr := r.ForRulesWithCandidates([]string{"shadow-requests", "csv"}, [][]string{nil, {"50/5m", "200/5m"}})
	rr.AddCandidate(1, 0, rules.Allowed)
	rr.AddCandidate(1, 0, rules.WouldBlock)
	rr.AddCandidate(1, 0, rules.Blocked) // any refusal is a would_block
	rr.AddCandidate(1, 1, rules.Allowed)
	rr.AddCandidate(1, 2, rules.WouldBlock)                                    // no such candidate: ignored
	rr.AddCandidate(0, 0, rules.WouldBlock)                                    // the rule has none: ignored
	rr.AddCandidate(5, 0, rules.WouldBlock)                                    // no such rule: ignored
	(*RingRules)(nil).AddCandidate(1, 0, rules.Allowed)                        // the nil recorder records nothing
	rr.AddCandidateAt(t0.Add(-RingWindow-time.Second), 1, 1, rules.WouldBlock) // older than the window: ignored
	want := map[string][rules.NumOutcomes]uint64{
		"csv 50/5m":  {rules.Allowed: 1, rules.WouldBlock: 2},
		"csv 200/5m": {rules.Allowed: 1},
	}
	h := r.Snapshot()
	if diff := cmp.Diff(candidates(h), want); diff != "" {
		t.Errorf("candidates (-got +want):\n%s", diff)
	}
	if got := totals(h)["csv"]; got != ([rules.NumOutcomes]uint64{}) {
		t.Errorf("the rule's own counts = %v, want none: a candidate's decisions are not the rule's", got)
	}
	var order []string
	for _, c := range h.Rules[0].Candidates { // "csv" sorts first
		order = append(order, c.Limit)
	}
	if diff := cmp.Diff(order, []string{"50/5m", "200/5m"}); diff != "" {
		t.Errorf("candidates in the order configured (-got +want):\n%s", diff)
	}

	// Ten minutes later, one more would-block; an hour after the first
	// counts, only it is left.
	rr.AddCandidateAt(t0.Add(10*time.Minute), 1, 1, rules.WouldBlock)
	h = r.SnapshotAt(t0.Add(RingWindow))
	want = map[string][rules.NumOutcomes]uint64{"csv 50/5m": {}, "csv 200/5m": {rules.WouldBlock: 1}}
	if diff := cmp.Diff(candidates(h), want); diff != "" {
		t.Errorf("an hour later (-got +want):\n%s", diff)
	}
}

// TestRingCandidatesAcrossReloads: a candidate keeps its history while
// its rule keeps its name and that limit, in whatever position; one no
// longer configured is dropped; a removed rule keeps its candidates.
func TestRingCandidatesAcrossReloads(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	old := r.ForRulesWithCandidates([]string{"a", "b"}, [][]string{{"50/5m", "100/5m"}, {"10/1m"}})
	old.AddCandidate(0, 0, rules.WouldBlock)
	old.AddCandidate(0, 1, rules.WouldBlock)
	old.AddCandidate(1, 0, rules.Allowed)
	clk.Advance(time.Minute)
	cur := r.ForRulesWithCandidates([]string{"a"}, [][]string{{"100/5m", "20/5m", "20/5m"}}) // b removed, 50/5m dropped, 20/5m twice
	cur.AddCandidate(0, 0, rules.WouldBlock)
	cur.AddCandidate(0, 1, rules.Allowed)
	cur.AddCandidate(0, 2, rules.Allowed) // the same limit: the same counts
	want := map[string][rules.NumOutcomes]uint64{
		"a 100/5m": {rules.WouldBlock: 2},
		"a 20/5m":  {rules.Allowed: 2},
		"b 10/1m":  {rules.Allowed: 1},
	}
	if diff := cmp.Diff(candidates(r.Snapshot()), want); diff != "" {
		t.Errorf("after a reload (-got +want):\n%s", diff)
	}
	r.ForRules([]string{"a"}) // a without candidates
	want = map[string][rules.NumOutcomes]uint64{"b 10/1m": {rules.Allowed: 1}}
	if diff := cmp.Diff(candidates(r.Snapshot()), want); diff != "" {
		t.Errorf("after the candidates went (-got +want):\n%s", diff)
	}
}

// TestRingBounded: at most MaxRules rows; rows of rules no longer
// configured are reused, least recently configured first.
func TestRingBounded(t *testing.T) {
	r := NewRing(RingOptions{Now: (&fakeClock{t: t0}).Now, MaxRules: 2})
	rr := r.ForRules([]string{"a", "b", "c"})
	rr.Add(0, rules.Blocked)
	rr.Add(2, rules.Blocked) // c has no row
	h := r.Snapshot()
	if diff := cmp.Diff(h.Untracked, []string{"c"}); diff != "" {
		t.Errorf("Untracked (-got +want):\n%s", diff)
	}
	if len(h.Rules) != 2 {
		t.Errorf("%d rows, want 2", len(h.Rules))
	}

	r.ForRules([]string{"b"})      // a no longer configured (generation 2)
	r.ForRules([]string{"b", "x"}) // x takes a's row
	r.ForRules([]string{"y", "b"}) // y takes x's row; b, configured, stays
	h = r.Snapshot()
	var names []string
	for _, rh := range h.Rules {
		names = append(names, rh.Rule)
	}
	if diff := cmp.Diff(names, []string{"b", "y"}); diff != "" {
		t.Errorf("rows (-got +want):\n%s", diff)
	}
	if len(h.Untracked) != 0 {
		t.Errorf("Untracked = %v, want none", h.Untracked)
	}
	if h.Rules[1].Total != ([rules.NumOutcomes]uint64{}) {
		t.Errorf("y inherited counts: %v", h.Rules[1].Total)
	}
}

// TestRingConcurrent adds from many goroutines while the clock moves
// through buckets; run with -race. Nothing is lost: the clock stays well
// inside one window.
func TestRingConcurrent(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := NewRing(RingOptions{Now: clk.Now})
	rr := r.ForRulesWithCandidates([]string{"a", "b"}, [][]string{{"50/5m"}, {"50/5m"}})
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rr.Add(w%2, rules.Outcome(i%4))
				rr.AddCandidate(w%2, 0, rules.Outcome(i%3))
				if w == 0 && i%100 == 0 {
					clk.Advance(3 * time.Second)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { // readers and reloads at the same time
		defer close(done)
		for range 50 {
			r.Snapshot()
			r.ForRulesWithCandidates([]string{"b", "a"}, [][]string{{"50/5m"}, {"50/5m"}})
		}
	}()
	wg.Wait()
	<-done
	var sum, cands uint64
	for _, rh := range r.Snapshot().Rules {
		for _, n := range rh.Total {
			sum += n
		}
		for _, c := range rh.Candidates {
			cands += c.Total[rules.Allowed] + c.Total[rules.WouldBlock]
		}
	}
	if sum != workers*each || cands != workers*each {
		t.Errorf("counted %d decisions and %d candidate decisions, want %d of each", sum, cands, workers*each)
	}
}

// TestRingAddDoesNotAllocate holds the hot-path budget.
func TestRingAddDoesNotAllocate(t *testing.T) {
	r := NewRing(RingOptions{})
	rr := r.ForRulesWithCandidates([]string{"a"}, [][]string{{"50/5m"}})
	if n := testing.AllocsPerRun(1000, func() { rr.Add(0, rules.Blocked) }); n != 0 {
		t.Errorf("RingRules.Add allocs = %v, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { rr.AddCandidate(0, 0, rules.WouldBlock) }); n != 0 {
		t.Errorf("RingRules.AddCandidate allocs = %v, want 0", n)
	}
}

func TestRingOf(t *testing.T) {
	m := NewMetrics("test")
	if got := RingOf(m.Registry); got == nil || got != m.Ring() {
		t.Errorf("RingOf(m.Registry) = %p, want m.Ring() = %p", got, m.Ring())
	}
	if got := RingOf(prometheus.NewRegistry()); got != nil {
		t.Errorf("RingOf(another registry) = %p, want nil", got)
	}
	if got := RingOf(prometheus.Gatherers{m.Registry}); got != nil {
		t.Errorf("RingOf(Gatherers) = %p, want nil", got)
	}
}

// TestRingOfForgets: the lookup does not keep a registry alive.
func TestRingOfForgets(t *testing.T) {
	count := func() int {
		n := 0
		rings.Range(func(any, any) bool { n++; return true })
		return n
	}
	before := count()
	for range 10 {
		NewMetrics("test")
	}
	for range 20 {
		runtime.GC()
		if count() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d ring entries after the registries went, want at most %d", count(), before)
}

// TestDecisionsRecordIntoRing: every rule decision Observe counts, and
// every candidate's ObserveCandidate counts, also lands in the Metrics'
// ring, across a reload (a second ForRules).
func TestDecisionsRecordIntoRing(t *testing.T) {
	m := NewMetrics("test")
	set := &rules.Set{Rules: []*rules.Rule{
		{Index: 0, Name: "shadow-requests", Action: rules.Count},
		{Index: 1, Name: "rate-limit-ip", Action: rules.Block, Candidates: []ratelimit.Limit{
			{Count: 50, Window: 5 * time.Minute}, {Count: 200, Window: 5 * time.Minute},
		}},
	}}
	log := slog.New(slog.DiscardHandler)
	d := NewDecisions(m.ForRules(set, ListenerGateway), log, LogNone, NewKeyHasher("k"), nil)
	req := &rules.Request{}
	d.Observe(req, set.Rules[0], rules.WouldBlock, []byte("k"), ratelimit.Decision{}, nil)
	d.Observe(req, set.Rules[1], rules.Blocked, []byte("k"), ratelimit.Decision{}, nil)
	d.Observe(req, set.Rules[1], rules.Allowed, []byte("k"), ratelimit.Decision{Allowed: true}, nil)
	d.ObserveCandidate(set.Rules[1], 0, rules.WouldBlock)
	d2 := NewDecisions(m.ForRules(set, ListenerGateway), log, LogNone, NewKeyHasher("k"), nil) // a reload
	d2.Observe(req, set.Rules[1], rules.Blocked, []byte("k"), ratelimit.Decision{}, nil)
	d2.ObserveCandidate(set.Rules[1], 0, rules.Allowed)
	d2.ObserveCandidate(set.Rules[1], 1, rules.WouldBlock)
	want := map[string][rules.NumOutcomes]uint64{
		"shadow-requests": {rules.WouldBlock: 1},
		"rate-limit-ip":   {rules.Allowed: 1, rules.Blocked: 2},
	}
	h := m.Ring().Snapshot()
	if diff := cmp.Diff(totals(h), want); diff != "" {
		t.Errorf("ring after Observe (-got +want):\n%s", diff)
	}
	want = map[string][rules.NumOutcomes]uint64{
		"rate-limit-ip 50/5m":  {rules.Allowed: 1, rules.WouldBlock: 1},
		"rate-limit-ip 200/5m": {rules.WouldBlock: 1},
	}
	if diff := cmp.Diff(candidates(h), want); diff != "" {
		t.Errorf("ring after ObserveCandidate (-got +want):\n%s", diff)
	}
}

// BenchmarkRingAddParallel puts the ring next to what Observe already does
// for the same decision, a Prometheus counter's Inc.
func BenchmarkRingAddParallel(b *testing.B) {
	b.Run("impl=ring", func(b *testing.B) {
		rr := NewRing(RingOptions{}).ForRules([]string{"a"})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rr.Add(0, rules.Blocked)
			}
		})
	})
	b.Run("impl=prometheus_counter", func(b *testing.B) {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
}

// TestRingDefaultClock: with the default clock, Add reads no clock and
// lands in the current bucket.
func TestRingDefaultClock(t *testing.T) {
	r := NewRing(RingOptions{})
	rr := r.ForRules([]string{"a"})
	rr.Add(0, rules.Blocked)
	rr.Add(0, rules.WouldBlock)
	h := r.Snapshot()
	if want := ([rules.NumOutcomes]uint64{rules.Blocked: 1, rules.WouldBlock: 1}); h.Rules[0].Total != want {
		t.Errorf("Total = %v, want %v", h.Rules[0].Total, want)
	}
	if d := time.Until(h.End); d <= 0 || d > RingBucket {
		t.Errorf("End is %v from now, want within one bucket", d)
	}
}

// TestRingTick: the timer of the default clock moves the current bucket,
// which Add then writes into. The clock here is a fake one, set to the
// middle of bucket 2.
func TestRingTick(t *testing.T) {
	clk := &fakeClock{t: t0.Add(25 * time.Second)}
	r := &Ring{now: clk.Now, coarse: true, start: t0, max: 4, rows: map[string]*ringRow{}}
	rr := r.ForRules([]string{"a"})
	rr.Add(0, rules.Denied) // bucket 0: the timer has not run yet
	r.tick(weak.Make(r))
	if got := r.epoch.Load(); got != 2 {
		t.Fatalf("after tick at 25 s: bucket %d, want 2", got)
	}
	rr.Add(0, rules.Blocked)
	h := r.SnapshotAt(clk.Now())
	b := h.Rules[0].Buckets
	if b[RingBuckets-1] != ([rules.NumOutcomes]uint64{rules.Blocked: 1}) || b[RingBuckets-3] != ([rules.NumOutcomes]uint64{rules.Denied: 1}) {
		t.Errorf("buckets 0..2 = %v, want denied in 0 and blocked in 2", b[RingBuckets-3:])
	}
}
