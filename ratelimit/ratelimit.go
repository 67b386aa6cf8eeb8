// Package ratelimit provides floodgate's rate-limiting core: limits,
// the algorithms that enforce them (Limit.Take, over a 16-byte State per
// key and limit, in integer nanoseconds), and the Store interface that
// counts events per key. It imports the standard library only, so that
// applications can embed it (see package httplimit) without pulling in the
// gateway's dependencies.
//
// The in-memory store lives in package ratelimit/memory; the Redis store in
// package ratelimit/redisstore. Every store passes the conformance suite in
// package ratelimit/storetest.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// An Algorithm decides how the events of a window are counted.
// The zero value is SlidingWindow.
type Algorithm uint8

const (
	// SlidingWindow (the default) counts events in windows aligned to
	// multiples of Window since the Unix epoch and admits n events at an
	// instant e into the current window when
	//
	//	curr + n + prev×(Window−e)/Window ≤ Count
	//
	// where curr and prev are the events admitted in the current and the
	// previous window: the previous window's count is weighted by how much
	// of it a Window ending now still overlaps (Cloudflare's "sliding window
	// counter"). At most Count events pass in any aligned window. Traffic
	// spread evenly gets Count per Window; a client that sent Count at the
	// very end of one window can send up to Count−1 more, spread over the
	// next, before that window ends (so at most 2×Count−1 in an unaligned
	// interval of length Window, against 2×Count for FixedWindow).
	// See Limit.Take for a worked example.
	SlidingWindow Algorithm = iota
	// GCRA is the generic cell rate algorithm: a token bucket of Count
	// tokens that refills one token every T = Window/Count (rounded down to
	// the nanosecond), computed from one timestamp instead of float tokens.
	// Count events pass at once from idle, then one every T: at most
	// Count + d/T in any interval of length d, so up to 2×Count−1 in an
	// interval of length Window after an idle spell, and Count per Window
	// sustained. See Limit.Take for a worked example.
	GCRA
	// FixedWindow counts events in windows aligned to multiples of Window
	// since the Unix epoch; the count resets at each window boundary, so up
	// to 2×Count events can pass around a boundary.
	FixedWindow
)

var algorithmNames = [...]string{
	SlidingWindow: "sliding_window",
	GCRA:          "gcra",
	FixedWindow:   "fixed_window",
}

// AlgorithmNames lists the names ParseAlgorithm accepts, default first.
func AlgorithmNames() []string { return append([]string(nil), algorithmNames[:]...) }

// String returns the algorithm's configuration name, such as "sliding_window".
func (a Algorithm) String() string {
	if int(a) < len(algorithmNames) {
		return algorithmNames[a]
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// ParseAlgorithm returns the algorithm named s ("sliding_window", "gcra",
// "fixed_window"). The empty string means SlidingWindow.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "" {
		return SlidingWindow, nil
	}
	for i, n := range algorithmNames {
		if s == n {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (allowed: %s)", s, strings.Join(algorithmNames[:], ", "))
}

// MaxWindowCount is the largest Count a SlidingWindow or FixedWindow limit
// may have: their per-key state keeps counts in 32 bits. GCRA limits may
// use any positive int64 count.
const MaxWindowCount = 1<<32 - 1

// MaxWindow is the longest Window a Limit may have: 366 days, the most
// ParseWindow accepts. It keeps every timestamp the algorithms compute
// within int64 nanoseconds.
const MaxWindow = 366 * 24 * time.Hour

// A Limit admits Count events per Window for each key.
// The zero value is invalid; use ParseLimit or fill every field and Validate.
type Limit struct {
	// Count is how many events a key may have per Window: positive, at
	// most MaxWindowCount for the window algorithms.
	Count int64
	// Window is the period Count applies to: whole milliseconds, from 1ms
	// to MaxWindow.
	Window time.Duration
	// Algorithm is how events are counted; the zero value is
	// SlidingWindow.
	Algorithm Algorithm
}

// Validate reports whether l can be enforced: Count is positive (at most
// MaxWindowCount unless the algorithm is GCRA, and at most one event per
// nanosecond for GCRA), Window is a whole number of milliseconds from 1ms
// to MaxWindow, and Algorithm is known. The error says which field is wrong
// and what is allowed. Stores refuse invalid limits with an error.
func (l Limit) Validate() error {
	switch {
	case l.Count <= 0:
		return fmt.Errorf("count %d must be positive", l.Count)
	case l.Window < time.Millisecond:
		return fmt.Errorf("window %s must be at least 1ms", FormatWindow(l.Window))
	case l.Window > MaxWindow:
		return fmt.Errorf("window %s must be at most %s", FormatWindow(l.Window), FormatWindow(MaxWindow))
	case l.Window%time.Millisecond != 0:
		return fmt.Errorf("window %s must be a whole number of milliseconds", FormatWindow(l.Window))
	case int(l.Algorithm) >= len(algorithmNames):
		return fmt.Errorf("unknown algorithm %d", l.Algorithm)
	case l.Algorithm != GCRA && l.Count > MaxWindowCount:
		return fmt.Errorf("count %d exceeds %d, the most a %s limit can count (use gcra)", l.Count, int64(MaxWindowCount), l.Algorithm)
	case l.Algorithm == GCRA && int64(l.Window) < l.Count: // Window/Count == 0, without dividing
		return fmt.Errorf("count %d is more than one event per nanosecond over %s", l.Count, l.Window)
	}
	return nil
}

// String formats l as ParseLimit reads it, e.g. "1500/5m".
func (l Limit) String() string {
	return strconv.FormatInt(l.Count, 10) + "/" + FormatWindow(l.Window)
}

// ParseLimit parses "N/WINDOW", such as "1500/5m", "60/1m", "5000/1d" or
// "10/1s". WINDOW is a Go duration ("90s", "1h30m") or a whole number of
// days ("1d", "7d"); a bare unit means one of it ("100/m"). The algorithm
// is SlidingWindow; set it on the result.
func ParseLimit(s string) (Limit, error) { return ParseLimitAs(s, SlidingWindow) }

// ParseLimitAs parses "N/WINDOW" like ParseLimit, as a limit of algorithm
// a, and validates it as such (a GCRA limit may count more than
// MaxWindowCount).
func ParseLimitAs(s string, a Algorithm) (Limit, error) {
	count, window, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		// "100 per 5m", "100 per minute": the fix is plain.
		if c, w, per := strings.Cut(strings.TrimSpace(s), " per "); per {
			if n, err := strconv.ParseInt(strings.TrimSpace(c), 10, 64); err == nil && n > 0 {
				if fix := limitFix(n, w, a); fix != "" {
					return Limit{}, fmt.Errorf("limit %q is not N/WINDOW: write %s", s, fix)
				}
			}
		}
		return Limit{}, fmt.Errorf("limit %q is not N/WINDOW (for example 100/5m)", s)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	if err != nil || n <= 0 {
		return Limit{}, fmt.Errorf("limit %q: count %q is not a positive integer", s, count)
	}
	w, err := ParseWindow(window)
	if err != nil {
		if fix := limitFix(n, window, a); fix != "" {
			return Limit{}, fmt.Errorf("limit %q: %w: write %s", s, err, fix)
		}
		return Limit{}, fmt.Errorf("limit %q: %w", s, err)
	}
	l := Limit{Count: n, Window: w, Algorithm: a}
	if err := l.Validate(); err != nil {
		return Limit{}, fmt.Errorf("limit %q: %w", s, err)
	}
	return l, nil
}

// ParseWindow parses a window length: a Go duration ("5m", "90s"), a whole
// number of days ("1d"), or a bare unit meaning one of it ("s", "m", "h", "d").
func ParseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "s", "m", "h", "d":
		s = "1" + s
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 32)
		if err != nil || n <= 0 || n > 366 {
			return 0, fmt.Errorf("window %q: days must be a whole number from 1 to 366", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("window %q is not a positive duration (such as 1s, 5m, 1h, 1d)", s)
	}
	return d, nil
}

// windowUnits are the words for a unit of time that a window written in
// English uses, and the unit ParseWindow reads.
var windowUnits = map[string]string{
	"ms": "ms", "millisecond": "ms", "milliseconds": "ms",
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
	"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
	"d": "d", "day": "d", "days": "d",
}

// limitFix returns the limit of n per window w, w written in words
// ("minute", "5 minutes", "1 hour"), as ParseLimit reads it ("100/5m"),
// or "" when w is no such thing or the limit would not be valid either.
func limitFix(n int64, w string, a Algorithm) string {
	fix := windowFix(w)
	if fix == "" {
		return ""
	}
	d, err := ParseWindow(fix)
	if err != nil || (Limit{Count: n, Window: d, Algorithm: a}).Validate() != nil {
		return ""
	}
	return strconv.FormatInt(n, 10) + "/" + fix
}

// windowFix returns the window that s, written in words, means, as
// ParseWindow reads it, or "" when s is no such thing.
func windowFix(s string) string {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	num, unit := s[:i], windowUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if unit == "" || len(num) > 9 {
		return ""
	}
	if num == "" {
		num = "1"
	}
	return num + unit
}

// FormatWindow formats d in one unit, the largest that divides it, as
// ParseWindow reads it back: "5m", "1d", "90s", "90m" (1h30m), "1.5s".
func FormatWindow(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s" // an invalid window, named in errors: not "0h"
	case d >= day && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return s
}

// A Decision is the outcome of one Store.Take call (or of Limit.Take on
// one counter). All durations are relative to the instant of the call.
type Decision struct {
	// Allowed reports whether the events fit under every limit. A Take of
	// zero events always fits.
	Allowed bool
	// Limit is the index, in the limits passed to Take, of the limit that
	// decided: the first one that refused, or when all admitted, the one
	// with the least Remaining (the first of those on a tie).
	Limit int
	// Remaining is how many more events that limit admits now, after the
	// events of this call if they were admitted. Never negative.
	Remaining int64
	// RetryAfter is zero when Allowed. Otherwise it is the shortest wait
	// after which the same Take would be admitted by every limit if no other
	// events arrive in between: the longest of the refusing limits' waits,
	// exact to the nanosecond. A Take of more events than a limit's Count
	// can never be admitted; that limit reports its Window, as a hint that
	// retrying does not help sooner.
	RetryAfter time.Duration
	// ResetAfter is how long until the deciding limit's quota resets if no
	// more events arrive; zero when its counter is empty. For FixedWindow
	// it is the end of the current window, and for GCRA the instant the
	// bucket is full: the full Count is available then. For SlidingWindow
	// it is the end of the current aligned window: then the events of the
	// window before no longer count at all, while this window's start to
	// fade, so the full Count is back one Window later at the latest. It
	// is at most Window, unless the clock went back (see Limit.Take) or,
	// for GCRA, a Charge went past the limit: then up to twice Window,
	// the bucket owing up to one Count more than it holds.
	// The RateLimit field's t is it in whole seconds (ResetSeconds).
	ResetAfter time.Duration
}

// A Store counts events per key. Implementations are safe for concurrent use.
type Store interface {
	// Take records n events for key under every limit in limits if all of
	// them admit them, and records nothing if any refuses: a request
	// refused by one limit does not consume another's quota. Being over a
	// limit is a Decision, not an error; an error means the store failed.
	//
	// Each distinct Limit value has its own counter for a key, so changing
	// a limit starts it afresh; a Limit listed twice is one counter and
	// counts n once. Take does not retain key after it returns, so callers
	// may pass a string that aliases a reused buffer.
	//
	// n must not be negative; n == 0 records nothing and reports the
	// current state (a peek). Take returns an error, and records nothing,
	// when limits is empty (ErrNoLimits), when n is negative, when a limit
	// is invalid (see Limit.Validate), or when the store fails, which
	// includes ctx ending before a remote store answers. Every Store passes the suite in package ratelimit/storetest.
	//
	// The limits slice is not retained either. Calling Take through the
	// interface with a literal list makes Go allocate that list on each
	// call; pass a slice built once (limits...) on hot paths.
	Take(ctx context.Context, key string, n int64, limits ...Limit) (Decision, error)
}

// A Charger is a Store that can also record events that have already
// happened, such as a request's cost known only once it was served
// (Limit.Charge). Charge records n events for key under every limit in
// limits whether or not they fit, each counter going past its limit by
// at most the limit's Count, so that the key is refused until the excess
// has drained. The Decision's Allowed reports whether the events fitted
// under every limit; otherwise Remaining is 0 and RetryAfter is the wait
// until one more event fits everywhere. Arguments and errors are as for
// Take; a failed Charge records nothing.
type Charger interface {
	Store
	Charge(ctx context.Context, key string, n int64, limits ...Limit) (Decision, error)
}

// ErrNoLimits is returned by stores when Take is called without limits.
var ErrNoLimits = errors.New("ratelimit: no limits given")
