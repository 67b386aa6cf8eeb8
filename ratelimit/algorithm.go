package ratelimit

import (
	"math/bits"
	"time"
)

// A State is one key's counter under one Limit: 16 bytes of integers,
// which a store keeps as they are and passes back to Limit.Take. The zero
// State is an empty counter, and so is any State whose Expiry is not after
// now, so a store may forget such a State (or never store one) without
// changing any decision.
//
// Data's meaning depends on the Limit's Algorithm; stores need not look
// inside it:
//
//   - SlidingWindow: the events admitted in the current aligned window
//     (high 32 bits) and in the one before it (low 32 bits); the current
//     window starts at Expiry − 2×Window.
//   - FixedWindow: the events admitted in the window that ends at Expiry.
//   - GCRA: the latest instant, in Unix nanoseconds, at which events were
//     admitted. Expiry is the theoretical arrival time: the instant at
//     which the bucket is full again.
//
// So comparing Data between States of one Algorithm orders them by how
// much a counter holds (windows) or by how recently it admitted (GCRA).
//
// A State is a plain value. The algorithms use integer nanoseconds, never
// floats, so the same events give the same decisions on every platform
// and in every store.
type State struct {
	// Expiry is the Unix time in nanoseconds at which the counter is back
	// to empty if no more events arrive.
	Expiry int64
	// Data is the rest of the counter; see the type's comment.
	Data uint64
}

// Time bounds. Instants are clamped to [0, maxTime] (1970 to 2116) and the
// expiry of a State to maxExpiry, so that every sum below fits in an int64
// for any Window up to MaxWindow.
const (
	maxTime   = 1 << 62
	maxExpiry = maxTime + 2*int64(MaxWindow)
)

// Take applies n events at instant now (Unix nanoseconds) to the counter
// s under l, and returns the counter's new State and the Decision. It is
// the algorithm behind Store.Take for one counter, for stores to call, and
// for the offline replayer, which drives now from log timestamps. It is a
// pure function of its arguments (so safe for concurrent use) and does not
// allocate. The returned Decision's Limit is 0; Combine merges the
// Decisions of several limits.
//
// Events are admitted or refused as a whole. Refused events are not
// recorded, and n == 0 is a peek that is always Allowed: both return s
// unchanged, except after the clock went back (below). A negative n counts
// as 0. n greater than l.Count is never admitted; the Decision has
// RetryAfter = l.Window (see Decision.RetryAfter). Instants before 1970
// count as 1970, and after 2116 as 2116.
//
// Stores keep the returned State whenever it differs from s, whether or
// not the events were admitted, and may drop it once its Expiry is not
// after the current instant.
//
// If the clock went back, a step of up to one Window counts as no time
// passing: the instant is taken as the start of the window s describes
// (for GCRA, as the latest instant s admitted at), as if the clock had
// paused. A longer step moves the counter onto the new clock: the counts
// into the window after now's, which an earlier instant counts as the
// start of (for GCRA, the bucket's level to now). So a step back delays
// refills by at most two Windows (three for SlidingWindow), however large,
// instead of blocking a key until the clock catches up; the moved State is
// returned even when nothing is admitted. Either way a step back lets
// through no more events than a clock that paused instead would; only a
// clock that swings back and forth by more than a Window can reopen a
// window's count (never GCRA's).
//
// If l is invalid (see Limit.Validate), Take returns s and a refusing
// Decision with zero durations; stores validate limits before calling it.
//
// # What 100/5m admits
//
// A limit of 100/5m, one event per request, starting from an empty counter
// at 12:04:00 (windows are aligned to the Unix epoch, so one runs
// 12:00–12:05, the next 12:05–12:10; TestTakeWorkedExample checks every
// line below):
//
// SlidingWindow:
//   - 12:04:00: 100 requests pass; the 101st is refused with RetryAfter
//     63s, because at 12:05:03 the 100 of the previous window weigh
//     100×297/300 = 99, which leaves room for one.
//   - 12:05:03: 1 passes; a second is refused with RetryAfter 3s.
//   - 12:07:30: the previous window weighs 100×150/300 = 50, the current
//     one holds 1, so 49 pass; the next is refused with RetryAfter 3s.
//   - 12:10:00: the window 12:05–12:10 holds 50 and now counts in full, so
//     50 pass; the next is refused with RetryAfter 6s.
//
// GCRA (one token every 5m/100 = 3s):
//   - 12:04:00: 100 requests pass; the 101st is refused with RetryAfter 3s.
//   - 12:04:03: 1 passes; a second is refused with RetryAfter 3s.
//   - 12:06:33: 150s later, 50 tokens are back: 50 pass, the next waits 3s.
//   - 12:11:33: after 5 idle minutes the bucket is full: 100 pass at once.
//
// FixedWindow:
//   - 12:04:00: 100 requests pass; the 101st is refused with RetryAfter
//     60s, until the window ends at 12:05:00.
//   - 12:05:00: 100 more pass at once: 200 within one minute.
//
// None of them turns 100/5m into "one request every 3 seconds" from idle:
// that is GCRA only after its burst of 100 is spent.
func (l Limit) Take(s State, now, n int64) (State, Decision) {
	return l.take(s, now, n, false)
}

// Charge is Take for events that have already happened, such as a
// request's cost known only once it was served: it records the n events
// whether or not they fit, so that the counter can go past the limit and
// refuse what comes next until the excess has drained, as a debt. Take
// instead records nothing it refuses, so a cost larger than what remains
// would be forgotten.
//
// The counter goes past the limit by at most Count (and a window
// algorithm's count stays at most MaxWindowCount), so a key is refused
// for at most about two Windows after one charge, however large. The
// Decision's Allowed reports whether the n events fitted under the limit;
// when they did not, Remaining is 0 and RetryAfter is the wait until one
// event fits again. Everything else is as for Take; a negative n counts
// as 0.
func (l Limit) Charge(s State, now, n int64) (State, Decision) {
	return l.take(s, now, n, true)
}

// take is Take, and Charge when force is set.
func (l Limit) take(s State, now, n int64, force bool) (State, Decision) {
	if !l.valid() {
		return s, Decision{}
	}
	now = min(max(now, 0), maxTime)
	n = max(n, 0)
	s.Expiry = min(s.Expiry, maxExpiry) // only a State not made by Take can be later
	var o outcome
	switch l.Algorithm {
	case GCRA:
		s, o = l.takeGCRA(s, now, n, force)
	case FixedWindow:
		s, o = l.takeFixed(s, now, n, force)
	default:
		s, o = l.takeSliding(s, now, n, force)
	}
	return s, Decision{
		Allowed:    o.allowed,
		Remaining:  o.remaining,
		RetryAfter: time.Duration(o.retry),
		ResetAfter: time.Duration(o.reset),
	}
}

// An outcome is a Decision for one limit. With four fields it stays in
// registers (a Decision does not), which makes Take twice as fast.
type outcome struct {
	allowed                 bool
	remaining, retry, reset int64
}

// valid is the part of Validate that Take relies on, without allocating.
func (l Limit) valid() bool {
	if l.Count <= 0 || l.Window <= 0 || l.Window > MaxWindow {
		return false
	}
	switch l.Algorithm {
	case GCRA:
		return l.Count <= int64(l.Window)
	case SlidingWindow, FixedWindow:
		return l.Count <= MaxWindowCount
	}
	return false
}

// takeSliding implements SlidingWindow.
func (l Limit) takeSliding(s State, now, n int64, force bool) (State, outcome) {
	w, c := int64(l.Window), l.Count
	var start, curr, prev int64
	changed := false
	if s.Expiry > now {
		start, curr, prev = s.Expiry-2*w, int64(s.Data>>32), int64(s.Data&(1<<32-1))
		switch {
		case now < start-w: // the clock went back more than a window: move the counts
			start, changed = now-now%w+w, true
		case now >= start+w: // one window later: the current one becomes the previous
			start, curr, prev = start+w, 0, curr
		}
	} else {
		start = now - now%w
	}
	t := max(now, start) // a clock up to a window back counts as the window's start
	e := t - start       // 0 ≤ e < w
	// The room left is c − curr − ⌈prev×(w−e)/w⌉: the exact comparison
	// curr + n + prev×(w−e)/w ≤ c, in integers.
	free := c - curr - mulDivCeil(prev, w-e, w)
	var o outcome
	switch {
	case n <= free || n == 0:
		o.allowed = true
		o.remaining = max(free-n, 0)
		if n > 0 {
			curr += n
			changed = true
		}
	case n > c:
		o.remaining = max(free, 0)
		o.retry = w
	default:
		o.remaining = max(free, 0)
		o.retry = t + slidingWait(c, w, e, curr, prev, n) - now
	}
	if force && !o.allowed {
		// The count goes to at most twice the limit; after it, not even
		// one event fits (free − n < 0 before, or the count at the
		// limit or more), which slidingWait needs.
		curr = max(curr, min(curr+min(n, 2*c), 2*c, MaxWindowCount))
		changed = true
		o.remaining = 0
		o.retry = t + slidingWait(c, w, e, curr, prev, 1) - now
	}
	if changed {
		s = State{Expiry: start + 2*w, Data: uint64(curr)<<32 | uint64(prev)}
	}
	if curr > 0 || prev > 0 {
		o.reset = start + w - now // the current window's end
	}
	return s, o
}

// slidingWait returns the least wait x > 0 after instant e of the current
// window such that n more events fit, given n ≤ c events do not fit now.
func slidingWait(c, w, e, curr, prev, n int64) int64 {
	// Still in this window: need prev×(w−e−x) ≤ (c−curr−n)×w, so the
	// largest k = w−e−x allowed is ⌊(c−curr−n)×w/prev⌋. prev > 0 here,
	// since with prev = 0 and curr + n ≤ c the events would fit.
	if room := c - curr - n; room >= 0 && prev > 0 {
		if k := mulDivFloor(room, w, prev); k > 0 {
			return w - e - k // k < w−e because the events do not fit at e
		}
	}
	// In the next window curr becomes the previous count: need
	// curr×(w−y) ≤ (c−n)×w at y into it, so y = w − ⌊(c−n)×w/curr⌋.
	y := int64(0)
	if curr > 0 {
		y = w - mulDivFloor(c-n, w, curr)
	}
	return w - e + y
}

// takeFixed implements FixedWindow.
func (l Limit) takeFixed(s State, now, n int64, force bool) (State, outcome) {
	w, c := int64(l.Window), l.Count
	var end, count int64
	changed := false
	if s.Expiry > now {
		end, count = s.Expiry, int64(min(s.Data, MaxWindowCount))
		if end-2*w > now { // the clock went back more than a window: move the count
			end, changed = now-now%w+2*w, true
		}
	} else {
		end = now - now%w + w
	}
	free := c - count
	var o outcome
	switch {
	case n <= free || n == 0:
		o.allowed = true
		o.remaining = max(free-n, 0)
		if n > 0 {
			count += n
			changed = true
		}
	case n > c:
		o.remaining = max(free, 0)
		o.retry = w
	default:
		o.remaining = max(free, 0)
		o.retry = end - now
	}
	if force && !o.allowed {
		count = max(count, min(count+min(n, 2*c), 2*c, MaxWindowCount))
		changed = true
		o.remaining = 0
		o.retry = end - now
	}
	if changed {
		s = State{Expiry: end, Data: uint64(count)}
	}
	if count > 0 {
		o.reset = end - now
	}
	return s, o
}

// takeGCRA implements GCRA: at instant t the bucket lacks (tat − t)/T of
// its c tokens, where tat is the theoretical arrival time.
func (l Limit) takeGCRA(s State, now, n int64, force bool) (State, outcome) {
	w, c := int64(l.Window), l.Count
	T := w / c // ≥ 1 since c ≤ w
	bound := c * T
	tat, last := s.Expiry, int64(min(s.Data, uint64(maxExpiry)))
	changed := false
	if now < last-w { // the clock went back more than a window: move the bucket to it
		tat, last, changed = tat-(last-now), now, true
	}
	t := max(now, last) // a clock up to a window back counts as the latest instant
	// Past the bound only after a Charge, by at most another bound; a
	// State not made here is cut to that, which keeps the sums in range.
	used := min(max(tat-t, 0), 2*bound)
	var o outcome
	switch {
	case n > c:
		o.remaining = max(bound-used, 0) / T
		o.retry = w
	case n == 0 || used+n*T <= bound:
		o.allowed = true
		if n > 0 {
			used += n * T
			tat, last, changed = t+used, t, true
		}
		o.remaining = max(bound-used, 0) / T
	default:
		o.remaining = max(bound-used, 0) / T
		o.retry = t + used + n*T - bound - now
	}
	if force && !o.allowed {
		used = max(used, min(used+min(n, 2*c)*T, 2*bound)) // > bound: one event waits
		tat, last, changed = t+used, t, true
		o.remaining = 0
		o.retry = t + used + T - bound - now
	}
	if changed {
		s = State{Expiry: tat, Data: uint64(last)}
	}
	if used > 0 {
		o.reset = t + used - now
	}
	return s, o
}

// mulDivFloor returns ⌊a×b/d⌋ for a, d > 0 and 0 ≤ b, capped at b (that
// is, as if a ≤ d), without overflow.
func mulDivFloor(a, b, d int64) int64 {
	if a >= d {
		return b
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(d)) // a < d, so the quotient is below b and hi < d
	return int64(q)
}

// mulDivCeil returns ⌈a×b/d⌉ for 0 ≤ a, 0 ≤ b ≤ d, d > 0, without overflow.
func mulDivCeil(a, b, d int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if b == d {
		return a
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, r := bits.Div64(hi, lo, uint64(d)) // b < d, so the quotient is below a and hi < d
	if r != 0 {
		q++
	}
	return int64(q)
}

// Combine folds d, the Decision of the limit at index i, into acc, the
// Decision for the limits before it, following Store.Take's rules: the
// first refusing limit decides, with the longest RetryAfter of all the
// refusing limits; when all admit, the one with the least Remaining
// decides. acc is ignored when i is 0. Stores that take several limits
// call it once per limit, in order.
func Combine(acc Decision, i int, d Decision) Decision {
	d.Limit = i
	switch {
	case i == 0:
		return d
	case !acc.Allowed:
		if !d.Allowed {
			acc.RetryAfter = max(acc.RetryAfter, d.RetryAfter)
		}
		return acc
	case !d.Allowed || d.Remaining < acc.Remaining:
		return d
	}
	return acc
}
