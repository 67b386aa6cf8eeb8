package telemetry

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/floodgate/floodgate/internal/session"
)

// SessionMetrics count visitor sessions. Labels are fixed
// sets: no session id, address or cookie value is ever a label.
type SessionMetrics struct {
	// Issued counts sessions issued (Set-Cookie sent).
	Issued prometheus.Counter
	// Refused counts page loads served without a new session because
	// their address was over sessions.per_ip.max_new.
	Refused prometheus.Counter
	// Valid and Invalid count requests that sent a session cookie, by
	// whether it verified (forged, tampered and expired cookies are
	// invalid).
	Valid, Invalid prometheus.Counter

	tracker atomic.Pointer[session.IPTracker]
}

// Sessions returns the session metrics, registering them on first use.
func (m *Metrics) Sessions() *SessionMetrics {
	m.sessionsOnce.Do(func() {
		s := &SessionMetrics{
			Issued: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "floodgate_sessions_issued_total",
				Help: "Visitor sessions issued (Set-Cookie of the session cookie).",
			}),
			Refused: prometheus.NewCounter(prometheus.CounterOpts{
				Name: "floodgate_sessions_refused_total",
				Help: "Page loads served without a new session because their address was over sessions.per_ip.max_new.",
			}),
		}
		cookies := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floodgate_session_cookies_total",
			Help: "Requests that sent a session cookie, by result: valid, or invalid (forged, tampered, expired or malformed: treated as no session).",
		}, []string{"result"})
		s.Valid, s.Invalid = cookies.WithLabelValues("valid"), cookies.WithLabelValues("invalid")
		m.Registry.MustRegister(s.Issued, s.Refused, cookies, sessionsPerIP{s})
		m.sessions = s
	})
	return m.sessions
}

// SetTracker makes t the source of floodgate_sessions_per_ip.
func (s *SessionMetrics) SetTracker(t *session.IPTracker) { s.tracker.Store(t) }

// sessionsPerIP exports the tracker's last complete window as a histogram.
type sessionsPerIP struct{ s *SessionMetrics }

var (
	sessionsPerIPDesc = prometheus.NewDesc("floodgate_sessions_per_ip",
		"Client addresses (IPv6 by /64) by the number of new sessions they asked for in the last complete sessions.per_ip.window: how many visitors share an address. No address is kept or exported.",
		nil, nil)
	sessionsUntrackedDesc = prometheus.NewDesc("floodgate_sessions_per_ip_untracked",
		"Session requests in the last complete window from addresses beyond sessions.per_ip.max_addresses (neither tracked nor capped).",
		nil, nil)
)

func (c sessionsPerIP) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsPerIPDesc
	ch <- sessionsUntrackedDesc
}

func (c sessionsPerIP) Collect(ch chan<- prometheus.Metric) {
	t := c.s.tracker.Load()
	if t == nil {
		return
	}
	d := t.Distribution()
	count, sum, buckets := d.Histogram()
	ch <- prometheus.MustNewConstHistogram(sessionsPerIPDesc, count, sum, buckets)
	ch <- prometheus.MustNewConstMetric(sessionsUntrackedDesc, prometheus.GaugeValue, float64(d.Untracked))
}

// planUsage is floodgate_plan_usage_ratio, registered on first use.
type planUsage struct {
	once sync.Once
	vec  *prometheus.GaugeVec
}

// PlanUsage returns the gauge of a client's usage of its plan's tightest
// limit, 0 to 1, labelled by client id and plan (both from the
// configuration: a bounded set).
func (m *Metrics) PlanUsage() *prometheus.GaugeVec {
	m.plans.once.Do(func() {
		m.plans.vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floodgate_plan_usage_ratio",
			Help: "Each API client's use of its plan at its last request: the most used of the plan's limits, as a fraction (1 = at the limit). Alert before it reaches 1.",
		}, []string{"client", "plan"})
		m.Registry.MustRegister(m.plans.vec)
	})
	return m.plans.vec
}

// KeepPlanClients drops the floodgate_plan_usage_ratio series of clients
// the configuration no longer names with that plan (a reload removed a
// client, or moved it to another plan): clients maps each configured
// client id to its plan. Without it, a removed client's last usage would
// stay exported, and alert, until a restart.
func (m *Metrics) KeepPlanClients(clients map[string]string) {
	vec := m.plans.vec
	if vec == nil {
		return // never used: nothing to drop
	}
	ch := make(chan prometheus.Metric, 64)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	var stale [][2]string
	for metric := range ch {
		var d dto.Metric
		if metric.Write(&d) != nil {
			continue
		}
		var client, plan string
		for _, l := range d.GetLabel() {
			switch l.GetName() {
			case "client":
				client = l.GetValue()
			case "plan":
				plan = l.GetValue()
			}
		}
		if p, ok := clients[client]; !ok || p != plan {
			stale = append(stale, [2]string{client, plan})
		}
	}
	for _, cp := range stale {
		vec.DeleteLabelValues(cp[0], cp[1])
	}
}
