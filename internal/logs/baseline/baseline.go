// Package baseline measures how fast each client of a log sent requests:
// for every window length, each client's peak number of
// requests in one window aligned to a multiple of the length since the
// Unix epoch (a log query's bin(5m)); percentiles of those peaks overall
// and by client class; the top clients; and suggested thresholds, each
// with what it would have blocked.
//
// "Would have blocked" here is fixed-window arithmetic: a threshold T over
// a window refuses, in each aligned window, the requests of a client past
// its T-th, so it blocks Σ max(0, count − T) over clients and windows.
// That is exactly what a fixed_window rule does; `floodgate replay` runs
// the real engine for the other algorithms.
package baseline

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/uaclass"
	"github.com/floodgate/floodgate/ratelimit"
)

// DefaultWindows are the windows Baseline measures unless told otherwise.
var DefaultWindows = []time.Duration{time.Minute, 5 * time.Minute}

// A Baseline accumulates the requests of one or more logs. Make one with
// New, Add every record, then call Result. It is not safe for concurrent
// use.
type Baseline struct {
	windows   []int64 // nanoseconds
	cl        clients
	perWindow []window
	requests  int64
	decisions int64
	first     int64
	last      int64
}

// window tracks, per client, the aligned window being counted, and keeps
// the counts of the windows passed (segments).
type window struct {
	width    int64
	cur      []current // by ClientID
	segs     []segment
	disorder bool // a client's requests went back to an earlier window
	merged   bool
}

type current struct {
	bucket int64
	count  uint32
}

// A segment is a client's count in one aligned window. After merge there
// is one per client and window, sorted by client then bucket.
type segment struct {
	client ClientID
	count  uint32
	bucket int64
}

// New returns a Baseline over windows (DefaultWindows if none), each
// between one second and ratelimit.MaxWindow.
func New(windows []time.Duration) *Baseline {
	if len(windows) == 0 {
		windows = DefaultWindows
	}
	b := &Baseline{cl: newClients(), first: math.MaxInt64, last: math.MinInt64}
	for _, w := range windows {
		b.windows = append(b.windows, int64(w))
		b.perWindow = append(b.perWindow, window{width: int64(w)})
	}
	return b
}

// Windows returns the windows measured.
func (b *Baseline) Windows() []time.Duration {
	out := make([]time.Duration, len(b.windows))
	for i, w := range b.windows {
		out[i] = time.Duration(w)
	}
	return out
}

// Add counts rec if it is a request (decision-log records are counted
// apart, see Result) and returns its client.
func (b *Baseline) Add(rec *logs.Record) (ClientID, bool) {
	if rec.Kind != logs.KindRequest {
		b.decisions++
		return 0, false
	}
	id := b.cl.intern(rec.Client, rec.ClientHashed)
	class := rec.Class
	if class == uaclass.Unknown && rec.HasUserAgent {
		class = b.cl.classify(rec.UserAgent)
	}
	b.cl.classes[id][class]++
	b.requests++
	t := rec.Time
	b.first = min(b.first, t)
	b.last = max(b.last, t)
	for i := range b.perWindow {
		w := &b.perWindow[i]
		bucket := floorDiv(t, w.width)
		if int(id) >= len(w.cur) {
			w.cur = append(w.cur, make([]current, int(id)+1-len(w.cur))...)
		}
		c := &w.cur[id]
		switch {
		case c.count == 0:
			c.bucket, c.count = bucket, 1
		case c.bucket == bucket && c.count < math.MaxUint32:
			c.count++
		default:
			if bucket <= c.bucket { // out of order, or a full counter
				w.disorder = true
			}
			w.segs = append(w.segs, segment{client: id, count: c.count, bucket: c.bucket})
			c.bucket, c.count = bucket, 1
		}
	}
	return id, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// merge flushes the windows being counted into segments and, if requests
// came out of order, sums the segments of one client and window. Add may
// not be called after it.
func (w *window) merge() {
	if w.merged {
		return
	}
	w.merged = true
	for id, c := range w.cur {
		if c.count > 0 {
			w.segs = append(w.segs, segment{client: ClientID(id), count: c.count, bucket: c.bucket})
		}
	}
	w.cur = nil
	if !w.disorder {
		return
	}
	slices.SortFunc(w.segs, func(a, b segment) int {
		return cmp.Or(cmp.Compare(a.client, b.client), cmp.Compare(a.bucket, b.bucket))
	})
	out := w.segs[:0]
	for _, s := range w.segs {
		if n := len(out); n > 0 && out[n-1].client == s.client && out[n-1].bucket == s.bucket {
			out[n-1].count = uint32(min(uint64(out[n-1].count)+uint64(s.count), math.MaxUint32))
			continue
		}
		out = append(out, s)
	}
	w.segs = out
}

// Requests returns the number of request records added.
func (b *Baseline) Requests() int64 { return b.requests }

// Decisions returns the number of decision-log records Add was given and
// skipped.
func (b *Baseline) Decisions() int64 { return b.decisions }

// Clients returns the number of distinct clients.
func (b *Baseline) Clients() int { return len(b.cl.names) }

// ClientName returns a client's name as the log gives it, and whether the
// log gives it hashed.
func (b *Baseline) ClientName(id ClientID) (string, bool) { return b.cl.names[id], b.cl.hashed[id] }

// Class returns a client's class: that of most of its requests (Unknown
// aside); on a tie browser wins, then crawler, then script.
func (b *Baseline) Class(id ClientID) uaclass.Class { return b.cl.class(id) }

// Span returns the times of the first and last requests; ok is false when
// there were none.
func (b *Baseline) Span() (first, last time.Time, ok bool) {
	if b.requests == 0 {
		return time.Time{}, time.Time{}, false
	}
	return time.Unix(0, b.first).UTC(), time.Unix(0, b.last).UTC(), true
}

// Peaks returns, for the window at index wi of Windows, every client's
// peak count in one aligned window, indexed by ClientID.
func (b *Baseline) Peaks(wi int) []uint32 {
	w := &b.perWindow[wi]
	w.merge()
	peaks := make([]uint32, len(b.cl.names))
	for _, s := range w.segs {
		peaks[s.client] = max(peaks[s.client], s.count)
	}
	return peaks
}

// WouldBlock returns what threshold t over the window at index wi would
// have blocked with fixed aligned windows: requests past the t-th of a
// client in one window, the clients that sent them, and the browser
// clients among those.
func (b *Baseline) WouldBlock(wi int, t int64) (requests int64, clients, browsers int) {
	w := &b.perWindow[wi]
	w.merge()
	seen := make([]bool, len(b.cl.names))
	for _, s := range w.segs {
		if int64(s.count) <= t {
			continue
		}
		requests += int64(s.count) - t
		if !seen[s.client] {
			seen[s.client] = true
			clients++
			if b.cl.class(s.client) == uaclass.Browser {
				browsers++
			}
		}
	}
	return requests, clients, browsers
}

// FormatWindow formats a window as flags and reports write it: "1m", "5m".
func FormatWindow(d time.Duration) string { return ratelimit.FormatWindow(d) }
