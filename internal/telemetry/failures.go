package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Failures logs what fails beneath the gateway, the upstreams and the
// store, through one LogLimiter, so that an outage costs a line per
// interval rather than one per request; it counts upstream failures in
// floodgate_upstream_errors_total. The store's changes of state (failing,
// answering again) are always written at once. One Failures serves a
// process, shared by successive gateways; it is safe for concurrent use.
// No line holds a client's address: only route, upstream and rule names,
// a failure's kind, and the store's own error.
type Failures struct {
	lim            *LogLimiter
	log            *slog.Logger
	now            func() time.Time
	upstreamErrors *prometheus.CounterVec // nil without metrics

	storeDown  atomic.Bool
	storeFails atomic.Int64 // failures since the store was last seen failing
	mu         sync.Mutex   // changes storeDown, and orders the store's state lines
	downSince  time.Time
}

// NewFailures returns the Failures writing to log, counting in m (nil: no
// metrics), and limiting repeated lines as o says.
func NewFailures(log *slog.Logger, m *Metrics, o LogLimiterOptions) *Failures {
	f := &Failures{lim: NewLogLimiter(log, o), log: log, now: o.Now}
	if f.now == nil {
		f.now = time.Now
	}
	if m != nil {
		f.upstreamErrors = m.upstreamErrors
	}
	return f
}

// Limiter is the LogLimiter the lines go through.
func (f *Failures) Limiter() *LogLimiter { return f.lim }

// InitUpstream makes the floodgate_upstream_errors_total series of
// upstream exist, at zero, for each kind: so that rate() and alerts see a
// series before the first failure.
func (f *Failures) InitUpstream(upstream string, kinds []string) {
	if f.upstreamErrors == nil {
		return
	}
	for _, k := range kinds {
		f.upstreamErrors.WithLabelValues(upstream, k)
	}
}

// Upstream records a request the upstream named failed, on route, with
// kind (refused, timeout, reset, bad_response, unreachable): counted, and
// logged at WARN as "upstream failed", one line per upstream and kind
// per interval.
func (f *Failures) Upstream(route, upstream, kind string) {
	if f.upstreamErrors != nil {
		f.upstreamErrors.WithLabelValues(upstream, kind).Inc()
	}
	f.lim.Log("upstream\x1f"+upstream+"\x1f"+kind, slog.LevelWarn, "upstream failed",
		slog.String("upstream", upstream), slog.String("kind", kind), slog.String("route", route))
}

// BodyBuffer records a request body that could not be kept in a
// temporary file (routes[].request_buffering: the part beyond
// server.request_buffer_bytes), which was answered 500: logged at ERROR,
// one line per route per interval. err is the file system's, naming the
// directory ($TMPDIR) and never the client.
func (f *Failures) BodyBuffer(route string, err error) {
	f.lim.Log("body buffer\x1f"+route, slog.LevelError,
		"request body could not be buffered in a temporary file; answered 500 (give floodgate a writable $TMPDIR, /tmp by default)",
		slog.String("route", route), slog.String("error", err.Error()))
}

// storeKey is the LogLimiter key of the rules skipped because the store
// failed: one line per interval for them all, whatever the rule.
const storeKey = "rule skipped\x1fstore"

// RuleSkipped records a rule that was skipped because evaluating it
// failed, kind saying where: condition, key or store. Store failures are
// one line per interval for every rule together (an outage fails them
// all); the others one line per rule and kind per interval, their error
// without the client's value it failed on (RuleErrorText).
func (f *Failures) RuleSkipped(rule, kind string, err error) {
	key, text := storeKey, ""
	if kind == "store" {
		text = err.Error()
	} else {
		key, text = "rule skipped\x1f"+rule+"\x1f"+kind, RuleErrorText(err)
	}
	f.lim.Log(key, slog.LevelWarn, "rule skipped",
		slog.String("rule", rule), slog.String("kind", kind), slog.String("error", text))
}

// storeRefusedKey is RuleRefused's: one line per interval for every rule.
const storeRefusedKey = "rule refused\x1fstore"

// RuleRefused records a rule that refused a request because its store
// failed and its failure policy is fail_closed: the rule was not skipped,
// it answered 503. One line per interval for every rule together, as
// RuleSkipped's store failures.
func (f *Failures) RuleRefused(rule string, err error) {
	f.lim.Log(storeRefusedKey, slog.LevelWarn, "rule refused while its store fails",
		slog.String("rule", rule), slog.String("kind", "store"), slog.String("error", err.Error()))
}

// StoreFailed records a failed store operation. The first after the
// store answered writes "store failing" at once.
func (f *Failures) StoreFailed(err error) {
	f.storeFails.Add(1)
	if f.storeDown.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.storeDown.Load() {
		return
	}
	f.storeDown.Store(true)
	f.downSince = f.now()
	f.log.LogAttrs(context.Background(), slog.LevelWarn, "store failing",
		slog.String("error", err.Error()))
}

// StoreAnswered records a store operation that succeeded. The first
// after failures writes the rules skipped still counted, then "store
// answering again" with the failures since it began failing. It costs an
// atomic load while the store answers.
func (f *Failures) StoreAnswered() {
	if !f.storeDown.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.storeDown.Load() {
		return
	}
	f.storeDown.Store(false)
	f.lim.FlushKey(storeKey, true)
	f.lim.FlushKey(storeRefusedKey, true)
	f.log.LogAttrs(context.Background(), slog.LevelInfo, "store answering again",
		slog.Int64("failures", f.storeFails.Swap(0)),
		slog.String("failing_for", f.now().Sub(f.downSince).Round(time.Millisecond).String()))
}
