// Package telemetry provides floodgate's Prometheus metrics and its JSON
// decision log. Metric labels are bounded (rule, route, code, decision);
// no metric is ever labelled with a client key, and no log record holds a
// client address or session value, only a keyed hash of the counter key.
package telemetry

import (
	dto "github.com/prometheus/client_model/go"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/floodgate/floodgate/internal/rules"
)

// Metrics holds every collector floodgate exports. Create one per process
// with NewMetrics; it is safe for concurrent use.
type Metrics struct {
	Registry *prometheus.Registry

	ruleDecisions *prometheus.CounterVec
	ruleErrors    *prometheus.CounterVec
	requests      *prometheus.CounterVec
	upstream      *prometheus.HistogramVec
	// upstreamErrors counts requests an upstream failed, by kind
	// (Failures.Upstream).
	upstreamErrors *prometheus.CounterVec
	unsolicited    *prometheus.CounterVec
	tokenFetches   *prometheus.CounterVec
	storeErrors    prometheus.Counter
	storeLatency   prometheus.Histogram
	inflight       prometheus.Gauge
	mode           *prometheus.GaugeVec
	degraded       *prometheus.CounterVec
	candidates     *prometheus.CounterVec
	charged        *prometheus.CounterVec
	reloads        *prometheus.CounterVec
	configInfo     *prometheus.GaugeVec
	lastReload     prometheus.Gauge
	lastReloadOK   prometheus.Gauge
	ring           *Ring // the last hour of rule decisions, for the dashboard (ring.go)

	mu    sync.Mutex
	rules map[string]map[string]bool // rule names with series, and their candidates: to drop what a reload removed

	sessionsOnce sync.Once
	sessions     *SessionMetrics
	plans        planUsage
}

// NewMetrics registers floodgate's collectors, plus the Go runtime and
// process collectors, on a new registry.
func NewMetrics(version string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		ring:     newRegistryRing(reg),
		ruleDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floodgate_rule_decisions_total",
			Help: "Requests a rule matched, by what it decided: allowed, blocked (429), would_block (shadow or log-only), denied (403) or unavailable (503: a concurrency cap), and by the listener that decided: gateway or decide.",
		}, []string{"listener", "rule", "decision"}),
		ruleErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floodgate_rule_errors_total",
			Help: "Rule evaluations that failed and were skipped (fail open), by kind: condition, key or store.",
		}, []string{"rule", "kind"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floodgate_requests_total",
			Help: "Requests answered, by listener (gateway, or decide: the answers to a proxy asking), route and HTTP status code (floodgate's own answers included, and the server's refusals of malformed requests under route \"\").",
		}, []string{"listener", "route", "code"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floodgate_upstream_duration_seconds",
			Help:    "Time from forwarding a request to the upstream's response header, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		unsolicited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floodgate_upstream_unsolicited_total",
			Help: "Answers an upstream sent that no request asked for (found after a complete response or on an idle pooled connection); the connection was closed.",
		}, []string{"upstream"}),
		storeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floodgate_store_errors_total",
			Help: "Store operations that failed; the request was decided by the failure policy.",
		}),
		storeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "floodgate_store_duration_seconds",
			Help:    "Duration of store decisions, sampled one in 16.",
			Buckets: []float64{1e-7, 2.5e-7, 5e-7, 1e-6, 1e-5, 1e-4, 5e-4, .001, .005, .01, .05, .1},
		}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "floodgate_inflight_requests",
			Help: "Requests being handled now.",
		}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floodgate_mode",
			Help: "1 for the global mode in force (enforce or log-only), 0 for the other.",
		}, []string{"mode"}),
	}
	m.candidates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_rule_candidate_decisions_total",
		Help: "What each candidate (shadow) limit of a rule would have decided for the requests the rule matched: allowed or would_block, by listener (gateway or decide).",
	}, []string{"listener", "rule", "candidate", "decision"})
	m.charged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_rule_cost_total",
		Help: "Cost charged to rules after responses, in each rule's unit (requests, upstream seconds, bytes or header units).",
	}, []string{"rule", "cost"})
	m.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_store_degraded_decisions_total",
		Help: "Rule decisions made without the store because it failed, by rule and the policy applied: fail_open (admitted) or fail_closed (503).",
	}, []string{"rule", "policy"})
	m.upstreamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_upstream_errors_total",
		Help: "Requests an upstream failed, by upstream and kind: refused, timeout, reset, bad_response or unreachable.",
	}, []string{"upstream", "kind"})
	m.tokenFetches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_upstream_token_fetches_total",
		Help: "Fetches of floodgate's own token for an upstream (auth.type client_credentials), by upstream and result: success or failure.",
	}, []string{"upstream", "result"})
	reg.MustRegister(m.candidates, m.charged, m.degraded, m.upstreamErrors, m.tokenFetches)
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "floodgate_config_reloads_total",
		Help: "Configuration loads, by result: success (applied) or failure (rejected; the previous configuration keeps running).",
	}, []string{"result"})
	m.configInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "floodgate_config_info",
		Help: "Always 1; the hash label identifies the configuration file in force.",
	}, []string{"hash"})
	m.lastReload = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "floodgate_config_last_reload_success_timestamp_seconds",
		Help: "When the configuration in force was loaded, in Unix seconds.",
	})
	m.lastReloadOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "floodgate_config_last_reload_successful",
		Help: "1 if the last configuration load was applied, 0 if it was rejected (the previous configuration keeps running until a load succeeds).",
	})
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	reg.MustRegister(m.reloads, m.configInfo, m.lastReload, m.lastReloadOK)
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "floodgate_build_info",
		Help: "Always 1; labels give the version and Go version.",
	}, []string{"version", "go_version"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(m.ruleDecisions, m.ruleErrors, m.requests, m.upstream, m.unsolicited, m.storeErrors,
		m.storeLatency, m.inflight, m.mode, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetMode records the global mode.
func (m *Metrics) SetMode(logOnly bool) {
	on, off := "enforce", "log-only"
	if logOnly {
		on, off = off, on
	}
	m.mode.WithLabelValues(on).Set(1)
	m.mode.WithLabelValues(off).Set(0)
}

// Reloaded records a configuration load: applied (ok) or rejected, and the
// hash of the configuration in force afterwards.
func (m *Metrics) Reloaded(ok bool, hash string) {
	if !ok {
		m.reloads.WithLabelValues("failure").Inc()
		m.lastReloadOK.Set(0)
		return
	}
	m.reloads.WithLabelValues("success").Inc()
	m.lastReloadOK.Set(1)
	m.configInfo.Reset()
	m.configInfo.WithLabelValues(hash).Set(1)
	m.lastReload.SetToCurrentTime()
}

// Inflight is the in-flight request gauge.
func (m *Metrics) Inflight() prometheus.Gauge { return m.inflight }

// InflightNow is the number of requests being handled now: the in-flight
// gauge's value.
func (m *Metrics) InflightNow() int64 {
	var d dto.Metric
	if m.inflight.Write(&d) != nil {
		return 0
	}
	return int64(d.GetGauge().GetValue())
}

// RegisterConnections exports the public and internal listeners'
// connections: those open now (open is called at scrape time), and the
// counter of those closed at once over server.max_connections, which it
// returns.
func (m *Metrics) RegisterConnections(open func() int64) prometheus.Counter {
	rejected := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "floodgate_connections_rejected_total",
		Help: "Client connections closed at once because server.max_connections were open.",
	})
	m.Registry.MustRegister(rejected, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "floodgate_connections_open",
		Help: "Client connections open now on the public and internal listeners.",
	}, func() float64 { return float64(open()) }))
	return rejected
}

// StoreStats is what a store reports about its key table.
type StoreStats struct {
	Keys, MaxKeys      int64
	Evictions, Expired uint64
}

// RegisterStore exports a store's key table: tracked keys, the cap,
// evictions and expirations. stats is called at scrape time.
func (m *Metrics) RegisterStore(stats func() StoreStats) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "floodgate_store_keys",
			Help: "Keys the in-memory store tracks now.",
		}, func() float64 { return float64(stats().Keys) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "floodgate_store_max_keys",
			Help: "The in-memory store's key cap; at it, new keys evict old ones.",
		}, func() float64 { return float64(stats().MaxKeys) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "floodgate_store_evictions_total",
			Help: "Live keys evicted because the key table was full.",
		}, func() float64 { return float64(stats().Evictions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "floodgate_store_expired_total",
			Help: "Keys dropped because their counters had expired.",
		}, func() float64 { return float64(stats().Expired) }),
	)
}

// The listeners that decide, the values of the listener label: the
// gateway (public and internal listeners, which forward) and the decision
// listener (which answers a proxy that forwards).
const (
	ListenerGateway = "gateway"
	ListenerDecide  = "decide"
)

// RuleMetrics holds the pre-resolved per-rule counters of one rule set, so
// that counting a decision costs no label lookup.
type RuleMetrics struct {
	listener   string                                  // the listener label of these series
	degraded   [][2]prometheus.Counter                 // by rule index: fail_open, fail_closed
	decisions  [][rules.NumOutcomes]prometheus.Counter // by rule index, by rules.Outcome
	errors     [][3]prometheus.Counter                 // by rule index, by rules.FailureKind
	candidates [][][2]prometheus.Counter               // by rule index, candidate, allowed/would_block
	charged    []prometheus.Counter
	recent     *RingRules           // the rule set's rows in Metrics.Ring
	planUsage  *prometheus.GaugeVec // nil when no rule takes its limits from plans
}

// ForRules resolves the per-rule counters of set for the listener named
// (ListenerGateway, ListenerDecide) and initialises them to zero, so every
// rule's series exists before its first match.
func (m *Metrics) ForRules(set *rules.Set, listener string) *RuleMetrics {
	rm := &RuleMetrics{
		listener:   listener,
		decisions:  make([][rules.NumOutcomes]prometheus.Counter, len(set.Rules)),
		errors:     make([][3]prometheus.Counter, len(set.Rules)),
		candidates: make([][][2]prometheus.Counter, len(set.Rules)),
		charged:    make([]prometheus.Counter, len(set.Rules)),
		degraded:   make([][2]prometheus.Counter, len(set.Rules)),
		recent:     m.ring.forSet(set),
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	current := map[string]map[string]bool{}
	for _, r := range set.Rules {
		cands := map[string]bool{}
		for _, c := range r.Candidates {
			cands[c.String()] = true
		}
		current[r.Name] = cands
	}
	for name, cands := range m.rules {
		now, kept := current[name]
		if !kept { // a rule removed by a reload: drop its series
			m.ruleDecisions.DeletePartialMatch(prometheus.Labels{"rule": name})
			m.ruleErrors.DeletePartialMatch(prometheus.Labels{"rule": name})
			m.candidates.DeletePartialMatch(prometheus.Labels{"rule": name})
			m.charged.DeletePartialMatch(prometheus.Labels{"rule": name})
			m.degraded.DeletePartialMatch(prometheus.Labels{"rule": name})
			continue
		}
		for c := range cands {
			if !now[c] { // a candidate the reload removed from a kept rule
				m.candidates.DeletePartialMatch(prometheus.Labels{"rule": name, "candidate": c})
			}
		}
	}
	m.rules = current
	for _, r := range set.Rules {
		if r.Plan != "" {
			rm.planUsage = m.PlanUsage() // its own once: m.mu is not needed
			break
		}
	}
	for i, r := range set.Rules {
		for o, name := range rules.OutcomeNames() {
			rm.decisions[i][o] = m.ruleDecisions.WithLabelValues(listener, r.Name, name)
		}
		for k, name := range rules.FailureKindNames() {
			rm.errors[i][k] = m.ruleErrors.WithLabelValues(r.Name, name)
		}
		if r.Action == rules.Block || r.Action == rules.Count {
			rm.degraded[i] = [2]prometheus.Counter{
				m.degraded.WithLabelValues(r.Name, "fail_open"),
				m.degraded.WithLabelValues(r.Name, "fail_closed"),
			}
		}
		for _, c := range r.Candidates {
			rm.candidates[i] = append(rm.candidates[i], [2]prometheus.Counter{
				m.candidates.WithLabelValues(listener, r.Name, c.String(), "allowed"),
				m.candidates.WithLabelValues(listener, r.Name, c.String(), "would_block"),
			})
		}
		if r.Cost != "" && r.Cost != "requests" || r.HasCountWhen() {
			rm.charged[i] = m.charged.WithLabelValues(r.Name, r.Cost)
		}
	}
	return rm
}

// RouteMetrics holds the pre-resolved per-route collectors.
type RouteMetrics struct {
	name     string
	listener string
	requests *prometheus.CounterVec
	codes    [600]atomic.Pointer[prometheus.Counter]
	upstream prometheus.Observer
}

// ForRoute resolves the collectors of the route named name on the
// listener named (ListenerGateway, ListenerDecide).
func (m *Metrics) ForRoute(name, listener string) *RouteMetrics {
	return &RouteMetrics{name: name, listener: listener, requests: m.requests, upstream: m.upstream.WithLabelValues(name)}
}

// Request counts one answered request with status code.
func (rm *RouteMetrics) Request(code int) {
	if code < 100 || code >= len(rm.codes) {
		rm.requests.WithLabelValues(rm.listener, rm.name, strconv.Itoa(code)).Inc()
		return
	}
	c := rm.codes[code].Load()
	if c == nil {
		counter := rm.requests.WithLabelValues(rm.listener, rm.name, strconv.Itoa(code))
		c = &counter
		rm.codes[code].Store(c)
	}
	(*c).Inc()
}

// TokenFetched returns what counts the fetches of upstream's token.
func (m *Metrics) TokenFetched(upstream string) func(ok bool) {
	ok, failed := m.tokenFetches.WithLabelValues(upstream, "success"), m.tokenFetches.WithLabelValues(upstream, "failure")
	return func(success bool) {
		if success {
			ok.Inc()
		} else {
			failed.Inc()
		}
	}
}

// UpstreamUnsolicited returns the counter of the answers upstream sent
// that no request asked for.
func (m *Metrics) UpstreamUnsolicited(upstream string) prometheus.Counter {
	return m.unsolicited.WithLabelValues(upstream)
}

// Upstream records the upstream's time to response header.
func (rm *RouteMetrics) Upstream(d time.Duration) { rm.upstream.Observe(d.Seconds()) }
