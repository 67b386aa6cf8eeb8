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

	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/uaclass"
	"github.com/floodgate/floodgate/ratelimit"
)

// LogLevel of decisions.
const (
	LogLimited = "limited" // every decision but allowed (default)
	LogAll     = "all"     // every rule match, allowed ones too
	LogNone    = "none"
)

// Decisions is the rules.Observer of one rule set: it counts every rule
// decision in metrics and writes the decision log.
type Decisions struct {
	rm       *RuleMetrics
	log      *slog.Logger
	which    string
	hasher   *KeyHasher
	failures *Failures
}

var _ rules.Observer = (*Decisions)(nil)

// NewDecisions returns the observer for a rule set. which is LogLimited,
// LogAll or LogNone. Rules skipped because they failed are logged
// through f, rate-limited; nil f: a Failures of its own on log.
func NewDecisions(rm *RuleMetrics, log *slog.Logger, which string, h *KeyHasher, f *Failures) *Decisions {
	if which == "" {
		which = LogLimited
	}
	if f == nil {
		f = NewFailures(log, nil, LogLimiterOptions{})
	}
	return &Decisions{rm: rm, log: log, which: which, hasher: h, failures: f}
}

// Observe implements rules.Observer.
func (d *Decisions) Observe(req *rules.Request, r *rules.Rule, o rules.Outcome, key []byte, dec ratelimit.Decision, err error) {
	if err != nil {
		kind := rules.FailureKindOf(err)
		d.rm.errors[r.Index][kind].Inc()
		if kind == rules.FailedStore && d.rm.degraded[r.Index][0] != nil {
			if o == rules.Unavailable {
				d.rm.degraded[r.Index][1].Inc()
			} else {
				d.rm.degraded[r.Index][0].Inc()
			}
		}
		if kind == rules.FailedStore && o == rules.Unavailable {
			d.failures.RuleRefused(r.Name, err) // fail_closed: not skipped
		} else {
			d.failures.RuleSkipped(r.Name, kind.String(), err)
		}
		return
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
	attrs := make([]slog.Attr, 0, 13)
	attrs = append(attrs,
		slog.String("rule", r.Name),
		slog.String("action", r.Action.String()),
		slog.String("decision", o.String()),
		slog.String("listener", d.rm.listener),
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
		case o != rules.Unavailable && dec.Limit >= 0 && dec.Limit < len(r.Limits) && (dec.Allowed || dec.RetryAfter > 0 || r.MaxInflight == 0 && r.MaxInflightPerKey == 0):
			attrs = append(attrs, slog.String("limit", r.Limits[dec.Limit].String()), slog.Int64("remaining", dec.Remaining))
		case r.MaxInflight > 0:
			attrs = append(attrs, slog.String("limit", "max_inflight "+strconv.FormatInt(r.MaxInflight, 10)))
		case r.MaxInflightPerKey > 0:
			attrs = append(attrs, slog.String("limit", "max_inflight_per_key "+strconv.FormatInt(r.MaxInflightPerKey, 10)))
		}
		if !dec.Allowed {
			// The Retry-After the client was (or, for a would-block, would
			// have been) sent: whole seconds, the rule's fixed value if any.
			retry, _ := respond.Timing(r.RetryAfter, dec)
			attrs = append(attrs, slog.Int64("retry_after_s", retry))
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
	d.rm.recent.AddCandidate(r.Index, i, o)
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
// sampled (one decision in 16) into m, and its failures and recovery
// reported to f (nil: not reported).
func (m *Metrics) InstrumentStore(s ratelimit.Store, f *Failures) ratelimit.Store {
	is := &instrumented{Store: s, m: m, f: f}
	switch u := s.(type) {
	case interface{ Answering() bool }:
		is.up = u.Answering
	case interface{ Up() bool }:
		is.up = u.Up
	}
	if c, ok := s.(ratelimit.Charger); ok {
		return &instrumentedCharger{is, c}
	}
	return is
}

// instrumentedCharger is instrumented for a store that can also charge.
type instrumentedCharger struct {
	*instrumented
	c ratelimit.Charger
}

func (s *instrumentedCharger) Charge(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	d, err := s.c.Charge(ctx, key, n, limits...)
	s.done(ctx, err)
	return d, err
}

type instrumented struct {
	ratelimit.Store
	m  *Metrics
	f  *Failures
	n  atomic.Uint32
	up func() bool // the store's own word on its server answering, if it has one
}

func (s *instrumented) Take(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	if s.n.Add(1)%16 != 0 {
		d, err := s.Store.Take(ctx, key, n, limits...)
		s.done(ctx, err)
		return d, err
	}
	start := time.Now()
	d, err := s.Store.Take(ctx, key, n, limits...)
	s.m.storeLatency.Observe(time.Since(start).Seconds())
	s.done(ctx, err)
	return d, err
}

// done counts and reports the outcome of one Take. A Take ended by its
// caller's context (the client left) says nothing of the store's health,
// nor does one a store that says its server is down, or answering with
// errors, answered without asking it (a Redis store's over-limit cache
// refusing during an outage, or while Redis refuses writes).
func (s *instrumented) done(ctx context.Context, err error) {
	switch {
	case err != nil:
		s.m.storeErrors.Inc()
		if s.f != nil && ctx.Err() == nil {
			s.f.StoreFailed(err)
		}
	case s.f != nil:
		if s.up != nil && !s.up() {
			return
		}
		s.f.StoreAnswered()
	}
}
