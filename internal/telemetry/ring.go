package telemetry

import (
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/rules"
)

// The Ring's shape: RingBuckets buckets of RingBucket each, RingWindow in
// all.
const (
	RingBucket  = 10 * time.Second
	RingBuckets = 360
	RingWindow  = RingBucket * RingBuckets // one hour
)

// DefaultRingRules is how many rules a Ring keeps history for unless
// RingOptions.MaxRules says otherwise.
const DefaultRingRules = 256

// ringOutcomes is the number of rules.Outcome values (allowed, blocked,
// would_block, denied, unavailable).
const ringOutcomes = rules.NumOutcomes

// RingOptions configures NewRing.
type RingOptions struct {
	// Now is the clock; nil means time.Now. Buckets are counted from the
	// clock's reading at NewRing, by elapsed time (monotonic when the clock
	// is time.Now), so a step of the wall clock does not empty the ring.
	//
	// With the default clock, RingRules.Add reads no clock at all (a clock
	// read costs more than the add itself): a timer moves the current
	// bucket at each bucket boundary, and stops once the Ring is garbage.
	// With a clock of its own, Add reads it at every call and no timer
	// runs, so tests step through fixed instants.
	Now func() time.Time
	// MaxRules bounds the rules the ring keeps a history for; 0 means
	// DefaultRingRules. Each costs RingBuckets×5×8 bytes (14.06 KiB), and
	// each of its candidate limits RingBuckets×2×8 bytes (5.63 KiB).
	MaxRules int
}

// A Ring keeps the last hour of rule decisions in memory, for the admin
// dashboard: per rule name and decision (allowed, blocked, would_block,
// denied, unavailable), counts in RingBuckets buckets of RingBucket each,
// and per candidate limit of a rule, what the candidate would have
// decided (allowed, would_block), in the same buckets. Recording is an
// atomic add into the current bucket (RingRules.Add and AddCandidate: no
// lock, no allocation, and with the default clock no clock read); the
// bucket that falls out of the window is zeroed when the clock moves into
// a new bucket, under a lock taken once per bucket. Memory is fixed:
// MaxRules rows of RingBuckets×5 counters, allocated when a rule is first
// seen, and RingBuckets×2 counters for each of their candidates.
//
// The ring is keyed by rule name, not by rule set, so a reload that keeps a
// rule keeps its history; a candidate keeps its history while its rule
// keeps both its name and that limit. A rule removed by a reload keeps its
// row (and its history, with its candidates', until it ages out) while
// there is room; when a reload brings
// more rules than MaxRules, the rows of rules no longer configured are
// reused first, least recently configured first, and the rules that still
// find no row are listed in History.Untracked.
//
// Counts are approximate only at a bucket boundary: a decision made
// within a few milliseconds of one (the timer's latency, or a clock read
// just before a rotation) may land in the neighbouring bucket. Make a
// Ring with NewRing (the zero value is not ready; a nil *Ring records and
// shows nothing). A Ring is safe for concurrent use.
type Ring struct {
	now    func() time.Time
	coarse bool // default clock: Add uses epoch, which a timer keeps current
	start  time.Time
	max    int
	epoch  atomic.Int64 // number of the newest bucket, counted from start

	mu        sync.Mutex // guards rows, gen and untracked; serialises rotation
	rows      map[string]*ringRow
	gen       int64    // ForRules calls so far
	untracked []string // rules of the last ForRules without a row
}

type ringRow struct {
	name   string
	counts [RingBuckets][ringOutcomes]atomic.Uint64
	used   int64            // the last ForRules generation that included this rule
	cands  []*ringCandidate // its candidate limits, as last configured; guarded by Ring.mu
}

// ringCandidate is the history of one candidate limit of a rule.
type ringCandidate struct {
	limit  string                        // "50/5m", the candidate label of floodgate_rule_candidate_decisions_total
	counts [RingBuckets][2]atomic.Uint64 // allowed, would_block
}

// candidateSlot is where a candidate's decision o is counted.
func candidateSlot(o rules.Outcome) int {
	if o == rules.Allowed {
		return 0
	}
	return 1 // would_block, as ObserveCandidate reports any refusal
}

// NewRing returns an empty ring whose first bucket starts now.
func NewRing(o RingOptions) *Ring {
	coarse := o.Now == nil
	if coarse {
		o.Now = time.Now
	}
	if o.MaxRules <= 0 {
		o.MaxRules = DefaultRingRules
	}
	r := &Ring{now: o.Now, coarse: coarse, start: o.Now(), max: o.MaxRules, rows: map[string]*ringRow{}}
	if coarse {
		r.tick(weak.Make(r))
	}
	return r
}

// tick moves the ring of the default clock to the current bucket, and
// schedules itself for the next boundary. It holds the ring weakly, so
// an unreachable ring is collected and its timer stops.
func (r *Ring) tick(wp weak.Pointer[Ring]) {
	now := r.now()
	b := r.bucketOf(now)
	if b > r.epoch.Load() {
		r.advance(b)
	}
	next := r.start.Add(time.Duration(b+1) * RingBucket).Sub(now)
	time.AfterFunc(next, func() {
		if r := wp.Value(); r != nil {
			r.tick(wp)
		}
	})
}

// bucketOf returns the number of the bucket that holds t.
func (r *Ring) bucketOf(t time.Time) int64 {
	d := t.Sub(r.start)
	b := int64(d / RingBucket)
	if d < 0 && d%RingBucket != 0 {
		b-- // floor, for instants before start
	}
	return b
}

func slot(b int64) int {
	s := b % RingBuckets
	if s < 0 {
		s += RingBuckets
	}
	return int(s)
}

// advance makes b the newest bucket, zeroing the buckets it reuses.
func (r *Ring) advance(b int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.epoch.Load()
	if b <= cur {
		return
	}
	from := cur + 1
	if b-cur > RingBuckets {
		from = b - RingBuckets + 1
	}
	for i := from; i <= b; i++ {
		s := slot(i)
		for _, row := range r.rows {
			for o := range row.counts[s] {
				row.counts[s][o].Store(0)
			}
			for _, c := range row.cands {
				c.counts[s][0].Store(0)
				c.counts[s][1].Store(0)
			}
		}
	}
	// Only now may adders see b: nothing they add to its bucket is zeroed.
	r.epoch.Store(b)
}

// RingRules records one rule set's decisions into a Ring. It is made by
// Ring.ForRules; the nil *RingRules records nothing. It is safe for
// concurrent use.
type RingRules struct {
	ring  *Ring
	rows  []*ringRow         // by rule index; nil for a rule without a row
	cands [][]*ringCandidate // by rule index and candidate index
}

// ForRules returns the recorder for a rule set whose rule i is names[i],
// none of which has candidate limits. Rules keep the rows (and history)
// they had under the same name.
func (r *Ring) ForRules(names []string) *RingRules { return r.ForRulesWithCandidates(names, nil) }

// ForRulesWithCandidates is ForRules for rules with candidate limits:
// candidates[i] names those of rule i as
// floodgate_rule_candidate_decisions_total's candidate label does
// ("50/5m"); candidates may be shorter than names. A candidate keeps its
// history while its rule keeps both its name and that limit; the history
// of a candidate no longer configured for its rule is dropped.
func (r *Ring) ForRulesWithCandidates(names []string, candidates [][]string) *RingRules {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	rr := &RingRules{ring: r, rows: make([]*ringRow, len(names)), cands: make([][]*ringCandidate, len(names))}
	for i, n := range names {
		if row := r.rows[n]; row != nil {
			row.used = r.gen
			rr.rows[i] = row
		}
	}
	r.untracked = nil
	for i, n := range names {
		if rr.rows[i] != nil {
			continue
		}
		if len(r.rows) >= r.max && !r.evictLocked() {
			r.untracked = append(r.untracked, n)
			continue
		}
		row := &ringRow{name: n, used: r.gen}
		r.rows[n] = row
		rr.rows[i] = row
	}
	for i, row := range rr.rows {
		if row == nil {
			continue
		}
		var limits []string
		if i < len(candidates) {
			limits = candidates[i]
		}
		var kept []*ringCandidate
		for _, l := range limits {
			// The same limit written twice shares its counts, as its
			// series does.
			c := findCandidate(kept, l)
			if c == nil {
				if c = findCandidate(row.cands, l); c == nil {
					c = &ringCandidate{limit: l}
				}
				kept = append(kept, c)
			}
			rr.cands[i] = append(rr.cands[i], c)
		}
		row.cands = kept
	}
	return rr
}

// evictLocked drops the row of the least recently configured rule that is
// not in the current generation, and reports whether there was one. Its
// RingRules (an old rule set still finishing requests) keep writing into
// the dropped row, which nothing reads any more.
func (r *Ring) evictLocked() bool {
	var victim *ringRow
	for _, row := range r.rows {
		if row.used < r.gen && (victim == nil || row.used < victim.used || row.used == victim.used && row.name < victim.name) {
			victim = row
		}
	}
	if victim == nil {
		return false
	}
	delete(r.rows, victim.name)
	return true
}

func findCandidate(cs []*ringCandidate, limit string) *ringCandidate {
	for _, c := range cs {
		if c.limit == limit {
			return c
		}
	}
	return nil
}

// forSet is ForRules for a compiled rule set.
func (r *Ring) forSet(set *rules.Set) *RingRules {
	if r == nil || set == nil {
		return nil
	}
	names := make([]string, len(set.Rules))
	candidates := make([][]string, len(set.Rules))
	for i, rule := range set.Rules {
		names[i] = rule.Name
		for _, c := range rule.Candidates {
			candidates[i] = append(candidates[i], c.String())
		}
	}
	return r.ForRulesWithCandidates(names, candidates)
}

// Add records that rule i decided o, now: in the current bucket, which
// the default clock's timer moves at each boundary (so a decision made
// within a few milliseconds of one may land in its neighbour). It does
// not allocate.
func (rr *RingRules) Add(i int, o rules.Outcome) {
	if rr == nil {
		return
	}
	if r := rr.ring; r.coarse {
		if i >= 0 && i < len(rr.rows) && rr.rows[i] != nil && int(o) < ringOutcomes {
			rr.rows[i].counts[slot(r.epoch.Load())][o].Add(1)
		}
		return
	}
	rr.AddAt(rr.ring.now(), i, o)
}

// AddAt records that rule i decided o at t. A t older than the ring's
// window is ignored; a t newer than its newest bucket rotates the ring.
func (rr *RingRules) AddAt(t time.Time, i int, o rules.Outcome) {
	if rr == nil || i < 0 || i >= len(rr.rows) || int(o) >= ringOutcomes {
		return
	}
	row := rr.rows[i]
	if row == nil {
		return
	}
	if b, ok := rr.ring.bucketAt(t); ok {
		row.counts[slot(b)][o].Add(1)
	}
}

// AddCandidate records that candidate limit c of rule i would have
// decided o (rules.Allowed, or rules.WouldBlock for any refusal), now, as
// Add does. It does not allocate.
func (rr *RingRules) AddCandidate(i, c int, o rules.Outcome) {
	if rr == nil {
		return
	}
	if r := rr.ring; r.coarse {
		if i >= 0 && i < len(rr.cands) && c >= 0 && c < len(rr.cands[i]) {
			rr.cands[i][c].counts[slot(r.epoch.Load())][candidateSlot(o)].Add(1)
		}
		return
	}
	rr.AddCandidateAt(rr.ring.now(), i, c, o)
}

// AddCandidateAt records that candidate limit c of rule i would have
// decided o at t, as AddAt does.
func (rr *RingRules) AddCandidateAt(t time.Time, i, c int, o rules.Outcome) {
	if rr == nil || i < 0 || i >= len(rr.cands) || c < 0 || c >= len(rr.cands[i]) {
		return
	}
	if b, ok := rr.ring.bucketAt(t); ok {
		rr.cands[i][c].counts[slot(b)][candidateSlot(o)].Add(1)
	}
}

// bucketAt returns the bucket a count at t goes in, rotating the ring
// when t is past its newest bucket, and false when t is older than the
// ring's window.
func (r *Ring) bucketAt(t time.Time) (int64, bool) {
	b := r.bucketOf(t)
	if cur := r.epoch.Load(); b > cur {
		r.advance(b)
	} else if b <= cur-RingBuckets {
		return 0, false
	}
	return b, true
}

// History is a copy of a Ring's contents.
type History struct {
	// End is the end of the newest bucket; bucket j of a RuleHistory
	// covers [End-(RingBuckets-j)×Bucket, End-(RingBuckets-j-1)×Bucket).
	End time.Time
	// Bucket is the width of a bucket (RingBucket).
	Bucket time.Duration
	// Rules holds every rule with a row, sorted by name.
	Rules []RuleHistory
	// Untracked names the rules of the newest rule set that have no row
	// because MaxRules rules already have one.
	Untracked []string
}

// RuleHistory is one rule's decisions over the ring's window.
type RuleHistory struct {
	Rule string
	// Buckets has RingBuckets entries, oldest first; each is indexed by
	// rules.Outcome.
	Buckets [][ringOutcomes]uint64
	// Total sums Buckets, by rules.Outcome.
	Total [ringOutcomes]uint64
	// Candidates are the rule's candidate limits, in the order last
	// configured.
	Candidates []CandidateHistory
}

// CandidateHistory is what one candidate limit of a rule would have
// decided over the ring's window, for the requests the rule matched.
type CandidateHistory struct {
	// Limit is the candidate, "50/5m" (the candidate label of
	// floodgate_rule_candidate_decisions_total).
	Limit string
	// Total counts its decisions by rules.Outcome: Allowed and
	// WouldBlock, nothing else.
	Total [ringOutcomes]uint64
}

// Snapshot is SnapshotAt(now).
func (r *Ring) Snapshot() History { return r.SnapshotAt(r.now()) }

// SnapshotAt returns the ring's contents as of t: the RingBuckets buckets
// ending with the one that holds t (or the newest, if t is older).
func (r *Ring) SnapshotAt(t time.Time) History {
	if r == nil {
		return History{Bucket: RingBucket}
	}
	if b := r.bucketOf(t); b > r.epoch.Load() {
		r.advance(b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.epoch.Load()
	h := History{
		End:       r.start.Add(time.Duration(cur+1) * RingBucket),
		Bucket:    RingBucket,
		Rules:     make([]RuleHistory, 0, len(r.rows)),
		Untracked: append([]string(nil), r.untracked...),
	}
	for _, row := range r.rows {
		rh := RuleHistory{Rule: row.name, Buckets: make([][ringOutcomes]uint64, RingBuckets)}
		for j := range RingBuckets {
			s := slot(cur - RingBuckets + 1 + int64(j))
			for o := range ringOutcomes {
				n := row.counts[s][o].Load()
				rh.Buckets[j][o] = n
				rh.Total[o] += n
			}
		}
		for _, c := range row.cands {
			ch := CandidateHistory{Limit: c.limit}
			for j := range RingBuckets {
				s := slot(cur - RingBuckets + 1 + int64(j))
				ch.Total[rules.Allowed] += c.counts[s][0].Load()
				ch.Total[rules.WouldBlock] += c.counts[s][1].Load()
			}
			rh.Candidates = append(rh.Candidates, ch)
		}
		h.Rules = append(h.Rules, rh)
	}
	sort.Slice(h.Rules, func(i, j int) bool { return h.Rules[i].Rule < h.Rules[j].Rule })
	return h
}

// Ring returns the ring of recent rule decisions that m's rule sets record
// into. It lives as long as m, across reloads.
func (m *Metrics) Ring() *Ring { return m.ring }

// rings finds the Ring of a Metrics from its Registry, for the admin
// dashboard, which is handed the registry as a prometheus.Gatherer. The
// registry is held weakly: the entry goes when the registry does.
var rings sync.Map // weak.Pointer[prometheus.Registry] → *Ring

// newRegistryRing returns a new Ring that RingOf finds from reg.
func newRegistryRing(reg *prometheus.Registry) *Ring {
	r := NewRing(RingOptions{})
	k := weak.Make(reg)
	rings.Store(k, r)
	runtime.AddCleanup(reg, func(k weak.Pointer[prometheus.Registry]) { rings.Delete(k) }, k)
	return r
}

// RingOf returns the Ring of the Metrics whose Registry is g, or nil when
// g is not such a registry.
func RingOf(g prometheus.Gatherer) *Ring {
	reg, ok := g.(*prometheus.Registry)
	if !ok || reg == nil {
		return nil
	}
	if r, ok := rings.Load(weak.Make(reg)); ok {
		return r.(*Ring)
	}
	return nil
}
