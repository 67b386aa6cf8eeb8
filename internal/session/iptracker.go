package session

import (
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"time"
)

// Defaults of IPTrackerOptions.
const (
	// DefaultTrackerWindow is the counting window when
	// IPTrackerOptions.Window is zero: the default session lifetime, so
	// the count approximates the sessions alive per address.
	DefaultTrackerWindow = time.Hour
	// DefaultTrackerMaxKeys is the table bound when
	// IPTrackerOptions.MaxKeys is zero (about 2.5 MB at most).
	DefaultTrackerMaxKeys = 1 << 16
)

// NumBuckets is the number of buckets in a Distribution.
const NumBuckets = 12

// IPTrackerOptions configure an IPTracker. The zero value is usable.
type IPTrackerOptions struct {
	// Window is the length of the fixed counting windows; default
	// DefaultTrackerWindow (1h).
	Window time.Duration
	// MaxKeys bounds the number of addresses tracked in a window;
	// default DefaultTrackerMaxKeys. Addresses beyond it are not
	// tracked and never refused (see IPTracker.Allow).
	MaxKeys int
	// MaxNewPerWindow caps the new sessions per address per window;
	// zero means no cap. Because windows are fixed, an address can get
	// up to twice the cap around a window boundary.
	MaxNewPerWindow int
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// An IPTracker counts new sessions per client-address key in fixed windows.
// It keeps only a 64-bit hash of each key, under a seed drawn
// at random for each tracker, so no address is retained in clear, and at
// most MaxKeys entries. It is safe for concurrent use.
type IPTracker struct {
	window  time.Duration
	maxKeys int
	limit   uint32
	now     func() time.Time
	seed    maphash.Seed

	mu     sync.Mutex
	start  time.Time         // start of the current window
	counts map[uint64]uint32 // key hash → new-session requests this window
	cur    Distribution
	last   Distribution
}

// A Distribution describes the new sessions per address over one window.
// Buckets[i] is the number of addresses with n session requests where
// n = 1 for i = 0 and 2^(i-1) < n ≤ 2^i after that, up to
// Buckets[NumBuckets-1], which holds every n > 2^(NumBuckets-2) (1024).
// Requests refused by the cap are counted too, so the distribution shows
// how many people share an address, not how many the cap let in.
type Distribution struct {
	Start     time.Time          // start of the window
	Window    time.Duration      // length of the window
	Buckets   [NumBuckets]uint64 // addresses per bucket, as described above
	Addresses uint64             // addresses tracked
	Sessions  uint64             // session requests from tracked addresses
	Refused   uint64             // session requests refused by the cap
	Untracked uint64             // session requests not tracked: the table was full
}

// NewIPTracker returns a tracker for o.
func NewIPTracker(o IPTrackerOptions) (*IPTracker, error) {
	var errs []error
	if o.Window == 0 {
		o.Window = DefaultTrackerWindow
	} else if o.Window < time.Second {
		errs = append(errs, fmt.Errorf("session: tracker window %v is shorter than one second", o.Window))
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultTrackerMaxKeys
	} else if o.MaxKeys < 0 {
		errs = append(errs, fmt.Errorf("session: tracker max keys %d is negative", o.MaxKeys))
	}
	if o.MaxNewPerWindow < 0 || int64(o.MaxNewPerWindow) > math.MaxUint32-1 {
		errs = append(errs, fmt.Errorf("session: new sessions per window %d is out of range [0, %d]", o.MaxNewPerWindow, uint32(math.MaxUint32-1)))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &IPTracker{
		window:  o.Window,
		maxKeys: o.MaxKeys,
		limit:   uint32(o.MaxNewPerWindow),
		now:     o.Now,
		seed:    maphash.MakeSeed(),
		counts:  make(map[uint64]uint32),
	}, nil
}

// Allow records a request for a new session from the address key ipKey
// (use the grouped key, e.g. the IPv6 /64) and reports whether it is
// within the cap. Without a cap it always returns true. When the table is
// full, an address not yet tracked is allowed and counted as Untracked:
// a flood of new addresses must not make the cap refuse everyone else.
func (t *IPTracker) Allow(ipKey string) bool {
	h := maphash.String(t.seed, ipKey)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll(t.now())
	n, ok := t.counts[h]
	if !ok && len(t.counts) >= t.maxKeys {
		t.cur.Untracked++
		return true
	}
	if n < math.MaxUint32 {
		if n > 0 {
			t.cur.Buckets[bucket(n)]--
		} else {
			t.cur.Addresses++
		}
		n++
		t.cur.Buckets[bucket(n)]++
		t.counts[h] = n
	}
	t.cur.Sessions++
	if t.limit != 0 && n > t.limit {
		t.cur.Refused++
		return false
	}
	return true
}

// Distribution returns the distribution of the last complete window; its
// Start is zero until one window has ended.
func (t *IPTracker) Distribution() Distribution {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll(t.now())
	return t.last
}

// Current returns the distribution of the window in progress.
func (t *IPTracker) Current() Distribution {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roll(t.now())
	return t.cur
}

// roll starts a new window if now is past the current one. t.mu is held.
func (t *IPTracker) roll(now time.Time) {
	start := now.Truncate(t.window)
	if !t.start.IsZero() && !start.After(t.start) {
		return
	}
	if !t.start.IsZero() {
		if start.Sub(t.start) == t.window {
			t.last = t.cur
		} else { // idle for more than a window: the last one was empty
			t.last = Distribution{Start: start.Add(-t.window), Window: t.window}
		}
	}
	t.start = start
	t.cur = Distribution{Start: start, Window: t.window}
	clear(t.counts)
}

// bucket returns the Distribution bucket of a count n ≥ 1.
func bucket(n uint32) int {
	return min(bits.Len32(n-1), NumBuckets-1)
}

// BucketUpperBound returns the inclusive upper bound of bucket i
// (1, 2, 4, … 1024), and +Inf for the last bucket.
func BucketUpperBound(i int) float64 {
	if i >= NumBuckets-1 {
		return math.Inf(1)
	}
	return float64(uint64(1) << i)
}

// Histogram returns d in the shape of prometheus.MustNewConstHistogram's
// arguments: the number of addresses, the sum of session requests and the
// cumulative count of addresses per finite upper bound.
func (d Distribution) Histogram() (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, NumBuckets-1)
	var cum uint64
	for i := range NumBuckets - 1 {
		cum += d.Buckets[i]
		buckets[BucketUpperBound(i)] = cum
	}
	return d.Addresses, float64(d.Sessions), buckets
}
