package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultLogInterval is a LogLimiter's interval unless its options say
// otherwise.
const DefaultLogInterval = 10 * time.Second

// LogLimiterOptions configures NewLogLimiter. Zero fields take their
// defaults.
type LogLimiterOptions struct {
	// Interval is the least time between two lines of one key. Default
	// DefaultLogInterval.
	Interval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// AfterFunc calls f once d has passed, so that the events counted
	// after a key's last line are written when the interval ends even if
	// no other event comes. Default: time.AfterFunc. Tests that drive Now
	// themselves pass a function that does nothing, and call Flush.
	AfterFunc func(d time.Duration, f func())
}

// A LogLimiter writes log lines for repeated events, at most one per key
// per interval: the first event of a key is written at once, with count
// 1; the events after it are counted, and written as one line with their
// count when the interval has passed (by the next event, or by a flush
// scheduled for then). So an outage that fails a thousand requests a
// second costs a line per interval, and every event is in some line's
// count. The line of a key carries the attributes of its last event.
//
// Keys are the caller's, and must come from a bounded set (an upstream
// and a failure kind, say): the limiter keeps a key until an interval
// passes without its events. Its methods are safe for concurrent use; the
// zero value is not usable: see NewLogLimiter.
type LogLimiter struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time
	after    func(time.Duration, func())

	mu        sync.Mutex
	keys      map[string]*limitedKey
	scheduled time.Time // when the next scheduled Flush runs; zero: none
}

// limitedKey is one key's state.
type limitedKey struct {
	next  time.Time // the earliest time of its next line
	count int64     // events since its last line
	level slog.Level
	msg   string
	attrs []slog.Attr // of the last event
}

// NewLogLimiter returns a LogLimiter writing to log.
func NewLogLimiter(log *slog.Logger, o LogLimiterOptions) *LogLimiter {
	if o.Interval <= 0 {
		o.Interval = DefaultLogInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	return &LogLimiter{log: log, interval: o.Interval, now: o.Now, after: o.AfterFunc, keys: map[string]*limitedKey{}}
}

// Interval is the least time between two lines of one key.
func (l *LogLimiter) Interval() time.Duration { return l.interval }

// Log records one event of key: it writes msg at level with attrs and
// "count" now, if key had no line in the last interval, or counts it for
// the key's next line. It reports whether it wrote a line.
func (l *LogLimiter) Log(key string, level slog.Level, msg string, attrs ...slog.Attr) bool {
	now := l.now()
	l.mu.Lock()
	k := l.keys[key]
	if k == nil {
		k = new(limitedKey)
		l.keys[key] = k
	}
	k.count++
	k.level, k.msg, k.attrs = level, msg, attrs
	if now.Before(k.next) {
		l.scheduleLocked(now, k.next.Sub(now))
		l.mu.Unlock()
		return false
	}
	n := k.count
	k.count, k.next = 0, now.Add(l.interval)
	l.mu.Unlock()
	l.write(level, msg, attrs, n)
	return true
}

// Flush writes the line of every key whose events have been counted and
// whose interval has passed; force writes those whose interval has not
// passed too (before a line that must follow them, or at shutdown).
func (l *LogLimiter) Flush(force bool) {
	l.flush("", force)
}

// FlushKey is Flush for key alone.
func (l *LogLimiter) FlushKey(key string, force bool) {
	l.flush(key, force)
}

// pending is a line that Flush writes.
type pending struct {
	level slog.Level
	msg   string
	attrs []slog.Attr
	count int64
}

func (l *LogLimiter) flush(only string, force bool) {
	now := l.now()
	var out []pending
	l.mu.Lock()
	if only == "" {
		l.scheduled = time.Time{}
	}
	var wait time.Duration // until the earliest line still due, if any
	for key, k := range l.keys {
		if only != "" && key != only {
			continue
		}
		switch {
		case k.count == 0 && !now.Before(k.next):
			delete(l.keys, key) // a whole interval without events
		case k.count == 0:
		case force || !now.Before(k.next):
			out = append(out, pending{k.level, k.msg, k.attrs, k.count})
			k.count, k.next = 0, now.Add(l.interval)
		default:
			if d := k.next.Sub(now); wait == 0 || d < wait {
				wait = d
			}
		}
	}
	if wait > 0 && only == "" {
		l.scheduleLocked(now, wait)
	}
	l.mu.Unlock()
	for _, p := range out {
		l.write(p.level, p.msg, p.attrs, p.count)
	}
}

// scheduleLocked makes sure a Flush runs d after now, or earlier.
func (l *LogLimiter) scheduleLocked(now time.Time, d time.Duration) {
	at := now.Add(d)
	if !l.scheduled.IsZero() && !at.Before(l.scheduled) {
		return
	}
	l.scheduled = at
	l.after(d, func() { l.Flush(false) })
}

func (l *LogLimiter) write(level slog.Level, msg string, attrs []slog.Attr, n int64) {
	all := make([]slog.Attr, 0, len(attrs)+2)
	all = append(all, attrs...)
	all = append(all, slog.Int64("count", n), slog.String("interval", l.interval.String()))
	l.log.LogAttrs(context.Background(), level, msg, all...)
}
