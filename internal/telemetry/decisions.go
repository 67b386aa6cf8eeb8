package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/uaclass"
	"github.com/floodgate/floodgate/ratelimit"
)

// LogLevel of decisions.
const (
	LogLimited = "limited" // blocked, would_block, denied (default)
	LogAll     = "all"     // every rule match, allowed ones too
	LogNone    = "none"
)

// Decisions is the rules.Observer of one rule set: it counts every rule
// decision in metrics and writes the decision log.
type Decisions struct {
	rm     *RuleMetrics
	log    *slog.Logger
	which  string
	hasher *KeyHasher
	// skips holds each rule's failing state (by rule index), so that a
	// store outage writes a line per rule per SkipLogInterval, with a
	// count, not one per request.
	skips []skipState
	// now reads a monotonic clock in nanoseconds; tests set it.
	now func() int64
}

// SkipLogInterval is the least time between two "rule skipped" lines of
// one rule while it keeps failing; the first failure and the recovery are
// always logged.
const SkipLogInterval = 10 * time.Second

// skipState is one rule's run of failed evaluations.
type skipState struct {
	failing    atomic.Bool
	lastLogged atomic.Int64 // when the last "rule skipped" line was written (now)
	skipped    atomic.Int64 // failures since that line
}

var decisionsClock = time.Now()

func monoNanos() int64 { return int64(time.Since(decisionsClock)) }

var _ rules.Observer = (*Decisions)(nil)

// NewDecisions returns the observer for a rule set. which is LogLimited,
// LogAll or LogNone.
func NewDecisions(rm *RuleMetrics, log *slog.Logger, which string, h *KeyHasher) *Decisions {
	if which == "" {
		which = LogLimited
	}
	return &Decisions{rm: rm, log: log, which: which, hasher: h, skips: make([]skipState, len(rm.errors)), now: monoNanos}
}

// Observe implements rules.Observer.
func (d *Decisions) Observe(req *rules.Request, r *rules.Rule, o rules.Outcome, key []byte, dec ratelimit.Decision, err error) {
	if err != nil {
		kind := 0 // condition
		if key != nil {
			kind = 2 // store
		} else if r.Action == rules.Block || r.Action == rules.Count {
			kind = 1 // key
		}
		d.rm.errors[r.Index][kind].Inc()
		if kind == 2 && d.rm.degraded[r.Index][0] != nil {
			if o == rules.Blocked {
				d.rm.degraded[r.Index][1].Inc()
			} else {
				d.rm.degraded[r.Index][0].Inc()
			}
		}
		d.skipped(r, err)
		return
	}
	if r.Index < len(d.skips) && d.skips[r.Index].failing.Load() {
		d.recovered(r)
	}
	d.rm.decisions[r.Index][o].Inc()
	d.rm.recent.Add(r.Index, o)
	if r.Plan != "" && d.rm.planUsage != nil && key != nil && dec.Limit >= 0 && dec.Limit < len(r.Limits) {
		used := 1.0
		if c := r.Limits[dec.Limit].Count; c > 0 && dec.Remaining < c {
			used = float64(c-dec.Remaining) / float64(c)
		}
		d.rm.planUsage.WithLabelValues(req.APIClient, r.Plan).Set(used)
	}
	switch {
	case d.which == LogNone, d.which == LogLimited && o == rules.Allowed:
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("rule", r.Name),
		slog.String("action", r.Action.String()),
		slog.String("decision", o.String()),
		slog.String("route", req.Route),
		slog.String("method", req.HTTP.Method),
		slog.String("path", req.Path),
		slog.String("ua_class", uaclass.Classify(req.HTTP.Header.Get("User-Agent")).String()),
	)
	if key != nil {
		attrs = append(attrs,
			slog.String("key_type", r.KeyType),
			slog.String("key_hash", d.hasher.Hash(key)),
		)
		switch {
		case dec.Limit >= 0 && dec.Limit < len(r.Limits) && (dec.Allowed || dec.RetryAfter > 0 || r.MaxInflight == 0 && r.MaxInflightPerKey == 0):
			attrs = append(attrs, slog.String("limit", r.Limits[dec.Limit].String()), slog.Int64("remaining", dec.Remaining))
		case r.MaxInflight > 0:
			attrs = append(attrs, slog.String("limit", "max_inflight "+strconv.FormatInt(r.MaxInflight, 10)))
		case r.MaxInflightPerKey > 0:
			attrs = append(attrs, slog.String("limit", "max_inflight_per_key "+strconv.FormatInt(r.MaxInflightPerKey, 10)))
		}
		if !dec.Allowed {
			attrs = append(attrs, slog.Float64("retry_after_s", dec.RetryAfter.Seconds()))
		}
	}
	d.log.LogAttrs(context.Background(), slog.LevelInfo, "decision", attrs...)
}

// ObserveCandidate implements rules.Observer.
func (d *Decisions) ObserveCandidate(r *rules.Rule, i int, o rules.Outcome) {
	j := 0
	if o != rules.Allowed {
		j = 1
	}
	d.rm.candidates[r.Index][i][j].Inc()
}

// Charged implements rules.Observer.
func (d *Decisions) Charged(r *rules.Rule, cost float64) {
	if c := d.rm.charged[r.Index]; c != nil {
		c.Add(cost)
	}
}

// A KeyHasher turns counter keys into short keyed hashes for logs, so the
// same client can be followed through a log without the log revealing its
// address or session. It is safe for concurrent use.
type KeyHasher struct{ secret []byte }

// NewKeyHasher returns a hasher keyed by secret; an empty secret draws a
// random one (hashes then differ between processes).
func NewKeyHasher(secret string) *KeyHasher {
	k := []byte(secret)
	if len(k) == 0 {
		k = make([]byte, 32)
		_, _ = rand.Read(k)
	}
	return &KeyHasher{secret: k}
}

// Hash returns the first 16 hex digits of HMAC-SHA256(secret, key).
func (h *KeyHasher) Hash(key []byte) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write(key)
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0])[:8])
}

// NewLogger returns floodgate's JSON logger at the named level.
func NewLogger(w interface{ Write([]byte) (int, error) }, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// InstrumentStore wraps s so that its errors are counted and its latency
// sampled (one decision in 16) into m.
func (m *Metrics) InstrumentStore(s ratelimit.Store) ratelimit.Store {
	return &instrumented{Store: s, m: m}
}

type instrumented struct {
	ratelimit.Store
	m *Metrics
	n atomic.Uint32
}

func (s *instrumented) Take(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	if s.n.Add(1)%16 != 0 {
		d, err := s.Store.Take(ctx, key, n, limits...)
		if err != nil {
			s.m.storeErrors.Inc()
		}
		return d, err
	}
	start := time.Now()
	d, err := s.Store.Take(ctx, key, n, limits...)
	s.m.storeLatency.Observe(time.Since(start).Seconds())
	if err != nil {
		s.m.storeErrors.Inc()
	}
	return d, err
}

// skipped logs a failed evaluation of r: at once when r was evaluating
// fine, then at most once per SkipLogInterval with the number of
// evaluations skipped since the last line.
func (d *Decisions) skipped(r *rules.Rule, err error) {
	if r.Index >= len(d.skips) {
		d.log.LogAttrs(context.Background(), slog.LevelWarn, "rule skipped",
			slog.String("rule", r.Name), slog.String("error", err.Error()))
		return
	}
	s := &d.skips[r.Index]
	now := d.now()
	n := s.skipped.Add(1)
	if s.failing.CompareAndSwap(false, true) {
		s.lastLogged.Store(now)
		s.skipped.Add(-n)
		d.log.LogAttrs(context.Background(), slog.LevelWarn, "rule skipped",
			slog.String("rule", r.Name), slog.String("error", err.Error()))
		return
	}
	last := s.lastLogged.Load()
	if now-last < int64(SkipLogInterval) || !s.lastLogged.CompareAndSwap(last, now) {
		return
	}
	n = s.skipped.Swap(0)
	d.log.LogAttrs(context.Background(), slog.LevelWarn, "rule skipped",
		slog.String("rule", r.Name), slog.String("error", err.Error()),
		slog.Int64("skipped", n), slog.Duration("over", time.Duration(now-last)))
}

// recovered logs that r evaluates again after failures, with the number
// skipped since the last line.
func (d *Decisions) recovered(r *rules.Rule) {
	s := &d.skips[r.Index]
	if !s.failing.CompareAndSwap(true, false) {
		return
	}
	d.log.LogAttrs(context.Background(), slog.LevelInfo, "rule evaluates again",
		slog.String("rule", r.Name), slog.Int64("skipped", s.skipped.Swap(0)))
}
