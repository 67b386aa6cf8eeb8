package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit"
)

// The dashboard's template and style sheet, compiled into the binary: the
// page needs nothing from the network, not even from the admin listener
// (the style sheet is inlined, the charts are SVG drawn here).
//
//go:embed dashboard/dashboard.html.tmpl dashboard/signin.html.tmpl dashboard/dashboard.css dashboard/mode.js
var dashboardFiles embed.FS

// Dashboard settings.
const (
	// dashboardRefresh is the default auto-refresh period in seconds;
	// ?refresh=N changes it (0 stops it, as WCAG 2.2.1 asks).
	dashboardRefresh = 10
	// rateWindow is how far back the page looks for the previous sample of
	// the counters it turns into rates; rateMinAge is the shortest
	// interval it reports a rate over.
	rateWindow = 5 * time.Minute
	rateMinAge = 5 * time.Second
)

// dashboard serves GET /admin/: an HTML page of what the gateway is doing,
// drawn on the server from the Prometheus registry (Options.Gatherer), the
// ring of the last hour of rule decisions (telemetry.RingOf) and the live
// Server. The numbers are in tables; the charts are inline SVG with text
// alternatives; the page has no script and refreshes itself with a meta
// refresh.
//
// Rates (floodgate's 429/403/503/502/504 answers, upstream failures,
// store errors, evictions) are differences
// between the counters now and a sample taken at an earlier page view,
// at most rateWindow ago: the first view shows totals only, and the
// automatic refresh brings the rates.
type dashboard struct {
	o    Options
	ring *telemetry.Ring
	page *template.Template
	csp  string
	now  func() time.Time
	// signIn is the browser sign-in (signin.go), whose form is one of
	// the dashboard's templates.
	signIn *signIn

	mu      sync.Mutex
	samples []sample // oldest first, at most rateWindow old
}

// newDashboard returns the dashboard of o.Server, reading o.Gatherer.
func newDashboard(o Options) *dashboard {
	css, err := dashboardFiles.ReadFile("dashboard/dashboard.css")
	if err != nil {
		panic(err) // embedded: cannot happen
	}
	js, err := dashboardFiles.ReadFile("dashboard/mode.js")
	if err != nil {
		panic(err)
	}
	t := template.Must(template.New("dashboard.html.tmpl").Funcs(template.FuncMap{
		"num":   formatCount,
		"num64": func(v float64) string { return formatCount(uint64(max(math.Round(v), 0))) },
		"rate":  formatRate,
		"share": formatShare,
		"secs":  formatSeconds,
		"cell": func(rule, window, decision string, n uint64) tableCell {
			return tableCell{Rule: rule, Window: window, Decision: decision, N: n}
		},
		"candidateWindow": func(rule, limit, window string, n [rules.NumOutcomes]uint64, hasShare bool, share float64) candidateWindow {
			return candidateWindow{Rule: rule, Limit: limit, Window: window,
				Allowed: n[rules.Allowed], WouldBlock: n[rules.WouldBlock], HasShare: hasShare, Share: share}
		},
		"css": func() template.CSS { return template.CSS(css) },
		"js":  func() template.JS { return template.JS(js) },
	}).ParseFS(dashboardFiles, "dashboard/dashboard.html.tmpl", "dashboard/signin.html.tmpl"))
	style := "style-src 'sha256-" + hash(css) + "'; "
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &dashboard{
		o:    o,
		ring: telemetry.RingOf(o.Gatherer),
		page: t,
		// Nothing but the inline style sheet and the mode switch's script
		// (by hash), inline images and the switch's own request.
		csp: "default-src 'none'; " + style + "script-src 'sha256-" + hash(js) + "'; connect-src 'self'; " +
			"img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
		now: now,
		signIn: newSignIn(now, t, "default-src 'none'; "+style+
			"img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
	}
}

// hash is the base64 SHA-256 of an inline script or style sheet, as a
// Content-Security-Policy names it.
func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (d *dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	refresh := dashboardRefresh
	if v := r.URL.Query().Get("refresh"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 3600 {
			problem(w, http.StatusBadRequest, "refresh must be a number of seconds from 0 (off) to 3600")
			return
		}
		refresh = n
		if refresh == 1 {
			refresh = 2
		}
	}
	p := d.build(r.Context(), refresh)
	if in, ok := signedInFrom(r.Context()); ok {
		p.SignedIn, p.CSRF, p.CanSwitch = true, in.CSRF, true
	} else if d.o.Server.Current().Config().Config.Admin.Token == "" {
		p.CanSwitch = true // a loopback peer, with no token to sign in with
	}
	var buf bytes.Buffer
	if err := d.page.Execute(&buf, p); err != nil {
		problem(w, http.StatusInternalServerError, "dashboard: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", d.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it, forms send "Origin: null"
	_, _ = w.Write(buf.Bytes())
}

// page is what the template shows.
type page struct {
	Generated  time.Time
	Refresh    int
	Mode       string
	LogOnly    bool
	Hash       string
	File, Env  string
	Version    string
	Uptime     string
	Ready      string // "" when ready
	StoreDown  string // the store's error when it does not answer, else ""
	Notices    []string
	HasHistory bool
	Overview   chart
	Top        []ruleRow
	Rules      []ruleRow
	Untracked  []string
	Answers    []answerRow
	Upstreams  []upstreamRow // failures by upstream and kind, those with any
	RateOver   string        // the interval the rates are over, "" for none
	Store      storeView
	Inflight   float64
	Caps       []capRow
	Reloads    reloadView
	Sessions   []metricRow
	Plans      []metricRow
	// SignedIn: a browser signed in with the form; CSRF is its token,
	// for the mode switch and the sign-out button. CanSwitch: the page's
	// script can switch the mode (signed in, or no token configured).
	SignedIn, CanSwitch bool
	CSRF                string
}

type ruleRow struct {
	Name, Action, Limits string
	Removed              bool                      // no longer configured (still in the ring)
	Hour, Total          [rules.NumOutcomes]uint64 // by rules.Outcome
	HasTotal             bool
	Candidates           []candidateRow // the rule's candidate limits, in the order configured
	Chart                chart
}

// candidateRow is what one candidate limit of a rule would have decided
// for the requests the rule matched: over the last hour (the ring) and
// since start (floodgate_rule_candidate_decisions_total).
type candidateRow struct {
	Limit       string                    // "50/5m", the metric's candidate label
	Hour, Total [rules.NumOutcomes]uint64 // Allowed and WouldBlock only
	// HourShare and TotalShare are the would-blocks' share of the
	// requests the candidate counted in the same window (allowed and
	// would_block): those the rule matched since the candidate was
	// configured, not before, when a reload added it. HasHourShare and
	// HasTotalShare say it counted any.
	HourShare, TotalShare       float64
	HasHourShare, HasTotalShare bool
}

// matched is every decision of a rule, or of a candidate, in one window.
func matched(counts [rules.NumOutcomes]uint64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n
}

// Limited is what the rule refused or would have: blocked, would_block,
// denied and unavailable, over the last hour.
func (r ruleRow) Limited() uint64 {
	return r.Hour[rules.Blocked] + r.Hour[rules.WouldBlock] + r.Hour[rules.Denied] + r.Hour[rules.Unavailable]
}

// Outcome indexes for the template.
func (ruleRow) Allowed() int     { return int(rules.Allowed) }
func (ruleRow) Blocked() int     { return int(rules.Blocked) }
func (ruleRow) WouldBlock() int  { return int(rules.WouldBlock) }
func (ruleRow) Denied() int      { return int(rules.Denied) }
func (ruleRow) Unavailable() int { return int(rules.Unavailable) }

// tableCell is one count of the rules table, marked with its rule, window
// and decision so that tests and scrapers of the page can find it.
type tableCell struct {
	Rule, Window, Decision string
	N                      uint64
}

// candidateWindow is one window of a candidate's row in the rules table,
// each count marked with its rule, candidate, window and decision, as
// tableCell marks a rule's.
type candidateWindow struct {
	Rule, Limit, Window string
	Allowed, WouldBlock uint64
	HasShare            bool
	Share               float64 // WouldBlock's share of the requests the candidate counted
}

type answerRow struct {
	Code, Meaning string
	Total, Share  float64 // since start; Share of every answer
	Rate          float64 // per second over page.RateOver
	RecentShare   float64
	HasRate       bool
}

// upstreamRow is one upstream's failures of one kind
// (floodgate_upstream_errors_total{upstream,kind}).
type upstreamRow struct {
	Upstream, Kind string
	Total          float64 // since start
	Rate           float64 // per second over page.RateOver
	HasRate        bool
}

type storeView struct {
	Kind                     string // memory, redis
	Errors                   float64
	ErrorRate                float64
	HasRate                  bool
	Keys, MaxKeys            float64
	HasKeys                  bool
	Fill                     float64 // Keys / MaxKeys
	Evictions, Expired       float64
	EvictionRate             float64
	Sampled                  float64 // sampled decisions (one in 16)
	Mean, P50, P99           float64 // seconds, since start
	RecentP99, RecentMean    float64
	HasLatency, HasRecentLat bool
	Degraded                 []metricRow
	Other                    []metricRow // every other floodgate_store_* and floodgate_redis_* series
}

type capRow struct {
	Kind, Name string // rule or route
	Cap        string
	Refused    string // last hour (rules) or since start (routes)
}

type reloadView struct {
	Success, Failure float64
	Last             string
	// Rejected is the last reload's rejection, nil when the last load was
	// applied: the file on disk is then not the configuration in force.
	Rejected *rejectionView
}

// rejectionView is a rejected reload: when, what asked for it, and every
// problem, one an entry, as the log line and GET /admin/config have them.
type rejectionView struct {
	Time, Reason string
	Problems     []string
}

// metricRow is one series of a family shown as is.
type metricRow struct {
	Name, Labels string
	Value        float64
}

// sample is the counters a rate is computed from.
type sample struct {
	at                time.Time
	codes             map[string]float64    // "429", "403", "503", "502", "504", "all"
	upstreamErrors    map[[2]string]float64 // by upstream and kind
	storeErrors       float64
	evictions         float64
	latCount, latSum  float64
	latBounds, latCum []float64
}

// build gathers everything the page shows.
func (d *dashboard) build(ctx context.Context, refresh int) page {
	now := d.now()
	srv := d.o.Server
	g := srv.Current()
	f := g.Config()
	p := page{
		Generated: now.UTC(),
		Refresh:   refresh,
		LogOnly:   srv.LogOnly(),
		Mode:      modeName(srv.LogOnly()),
		Hash:      srv.Hash(),
		File:      f.Name,
		Env:       f.Env,
	}
	if d.o.Ready != nil {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := d.o.Ready(rctx); err != nil {
			p.Ready = err.Error()
		}
		cancel()
	}
	if d.o.Store != nil {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if err := d.o.Store(rctx); err != nil {
			p.StoreDown = err.Error()
			p.Notices = append(p.Notices, "The store does not answer: "+err.Error())
		}
		cancel()
	}
	fams, err := d.o.Gatherer.Gather()
	if err != nil {
		p.Notices = append(p.Notices, "Some metrics could not be gathered: "+err.Error())
	}
	byName := make(map[string]*dto.MetricFamily, len(fams))
	for _, mf := range fams {
		byName[mf.GetName()] = mf
	}
	if mf := byName["floodgate_build_info"]; mf != nil && len(mf.Metric) > 0 {
		p.Version = labelsOf(mf.Metric[0])["version"]
	}
	if v, ok := single(byName, "process_start_time_seconds"); ok && v > 0 {
		start := time.Unix(0, int64(v*1e9))
		p.Uptime = now.Sub(start).Truncate(time.Second).String()
	}

	d.rules(&p, f, byName, now)
	cur := d.answersAndStore(&p, byName, now)
	d.rates(&p, cur)

	p.Inflight, _ = single(byName, "floodgate_inflight_requests")
	p.Caps = caps(f, p.Rules, byName)

	if mf := byName["floodgate_config_reloads_total"]; mf != nil {
		for _, m := range mf.Metric {
			switch labelsOf(m)["result"] {
			case "success":
				p.Reloads.Success = value(m)
			case "failure":
				p.Reloads.Failure = value(m)
			}
		}
	}
	if v, ok := single(byName, "floodgate_config_last_reload_success_timestamp_seconds"); ok && v > 0 {
		p.Reloads.Last = time.Unix(0, int64(v*1e9)).UTC().Format(time.RFC3339)
	}
	if rej := srv.LastRejection(); rej != nil {
		v := &rejectionView{Time: rej.Time.UTC().Format(time.RFC3339), Reason: rej.Reason}
		for line := range strings.SplitSeq(rej.Problems, "\n") {
			if line != "" {
				v.Problems = append(v.Problems, line)
			}
		}
		p.Reloads.Rejected = v
		p.Notices = append(p.Notices, fmt.Sprintf("The last reload (%s, at %s) was rejected: the previous configuration keeps running, and a restart would refuse the file as it is now. Its problems are under Configuration reloads; floodgate validate lists them too.", v.Reason, v.Time))
	}
	// Visitor sessions and API-client plans export series only when
	// configured (and plans once a client has used one): until then the
	// page says how to configure them.
	p.Sessions = seriesWithPrefix(fams, "floodgate_session")
	p.Plans = seriesWithPrefix(fams, "floodgate_plan")
	return p
}

// rules fills the rule table and charts: the configured rules in order,
// then rules a reload removed that still have decisions in the ring.
func (d *dashboard) rules(p *page, f *config.File, byName map[string]*dto.MetricFamily, now time.Time) {
	hist := map[string]telemetry.RuleHistory{}
	var h telemetry.History
	if d.ring != nil {
		h = d.ring.SnapshotAt(now)
		p.HasHistory = true
		p.Untracked = h.Untracked
		for _, rh := range h.Rules {
			hist[rh.Rule] = rh
		}
	}
	totals := map[string]*[rules.NumOutcomes]uint64{}
	candTotals := map[[2]string]*[rules.NumOutcomes]uint64{} // by rule and candidate
	if mf := byName["floodgate_rule_candidate_decisions_total"]; mf != nil {
		for _, m := range mf.Metric {
			l := labelsOf(m)
			o := rules.Allowed
			switch l["decision"] {
			case "allowed":
			case "would_block":
				o = rules.WouldBlock
			default:
				continue
			}
			k := [2]string{l["rule"], l["candidate"]}
			t := candTotals[k]
			if t == nil {
				t = new([rules.NumOutcomes]uint64)
				candTotals[k] = t
			}
			t[o] += uint64(value(m)) // summed over listeners
		}
	}
	if mf := byName["floodgate_rule_decisions_total"]; mf != nil {
		outcome := map[string]rules.Outcome{}
		for i, n := range rules.OutcomeNames() {
			outcome[n] = rules.Outcome(i)
		}
		for _, m := range mf.Metric {
			l := labelsOf(m)
			o, ok := outcome[l["decision"]]
			if !ok {
				continue
			}
			t := totals[l["rule"]]
			if t == nil {
				t = new([rules.NumOutcomes]uint64)
				totals[l["rule"]] = t
			}
			t[o] += uint64(value(m)) // summed over listeners
		}
	}
	configured := map[string]bool{}
	// row is a rule's row, with a row for each of its candidates: those
	// configured, or, for a rule a reload removed, those in the ring.
	row := func(name string, candidates []string) ruleRow {
		rr := ruleRow{Name: name}
		rh, inRing := hist[name]
		if inRing {
			rr.Hour = rh.Total
			rr.Chart = ruleChart(name, rh, h.Bucket)
		}
		if t := totals[name]; t != nil {
			rr.Total, rr.HasTotal = *t, true
		}
		if candidates == nil {
			for _, ch := range rh.Candidates {
				candidates = append(candidates, ch.Limit)
			}
		}
		for _, limit := range candidates {
			cr := candidateRow{Limit: limit}
			for _, ch := range rh.Candidates {
				if ch.Limit == limit {
					cr.Hour = ch.Total
					break
				}
			}
			if t := candTotals[[2]string{name, limit}]; t != nil {
				cr.Total = *t
			}
			// Of the requests the candidate counted: its rule's, since
			// it was configured (a reload may have added it).
			if n := matched(cr.Hour); n > 0 {
				cr.HourShare, cr.HasHourShare = float64(cr.Hour[rules.WouldBlock])/float64(n), true
			}
			if n := matched(cr.Total); n > 0 {
				cr.TotalShare, cr.HasTotalShare = float64(cr.Total[rules.WouldBlock])/float64(n), true
			}
			rr.Candidates = append(rr.Candidates, cr)
		}
		return rr
	}
	for _, rc := range f.Config.Rules {
		configured[rc.Name] = true
		rr := row(rc.Name, candidateLabels(rc))
		rr.Action = rc.Action
		if rr.Action == "" {
			rr.Action = config.ActionBlock
		}
		var lim []string
		lim = append(lim, rc.Limits...)
		if rc.MaxInflight > 0 {
			lim = append(lim, fmt.Sprintf("max_inflight %d", rc.MaxInflight))
		}
		if rc.MaxInflightPerKey > 0 {
			lim = append(lim, fmt.Sprintf("max_inflight_per_key %d", rc.MaxInflightPerKey))
		}
		rr.Limits = strings.Join(lim, ", ")
		p.Rules = append(p.Rules, rr)
	}
	for _, rh := range h.Rules {
		if configured[rh.Rule] {
			continue
		}
		if rh.Total == ([rules.NumOutcomes]uint64{}) {
			continue
		}
		rr := row(rh.Rule, nil)
		rr.Removed = true
		p.Rules = append(p.Rules, rr)
	}
	p.Overview = overviewChart(h)

	top := append([]ruleRow(nil), p.Rules...)
	sort.SliceStable(top, func(i, j int) bool { return top[i].Limited() > top[j].Limited() })
	for _, rr := range top {
		if rr.Limited() == 0 || len(p.Top) == 5 {
			break
		}
		p.Top = append(p.Top, rr)
	}
}

// candidateLabels returns a rule's candidate limits as
// floodgate_rule_candidate_decisions_total and the ring name them
// ("50/5m"), in the order configured; not nil, so that a configured
// rule never shows the candidates a reload took away.
func candidateLabels(rc config.Rule) []string {
	alg, _ := ratelimit.ParseAlgorithm(rc.Algorithm)
	out := make([]string, 0, len(rc.Candidates))
	for _, s := range rc.Candidates {
		if l, err := config.ParseLimit(s, alg); err == nil && !slices.Contains(out, l.String()) {
			out = append(out, l.String())
		}
	}
	return out
}

// answersAndStore reads the counters behind the answers and store
// sections and returns them as a sample for rates.
func (d *dashboard) answersAndStore(p *page, byName map[string]*dto.MetricFamily, now time.Time) sample {
	cur := sample{at: now, codes: map[string]float64{}}
	if mf := byName["floodgate_requests_total"]; mf != nil {
		for _, m := range mf.Metric {
			v := value(m)
			cur.codes["all"] += v
			cur.codes[labelsOf(m)["code"]] += v
		}
	}
	for _, c := range []struct{ code, meaning string }{
		{"429", "rate limited (a block rule)"},
		{"403", "denied (a deny rule)"},
		{"503", "unavailable (a concurrency cap, a fail_closed store, or the upstream)"},
		{"502", "bad gateway (the upstream failed: refused, reset, a bad answer, unreachable)"},
		{"504", "gateway timeout (the upstream did not answer in time)"},
	} {
		a := answerRow{Code: c.code, Meaning: c.meaning, Total: cur.codes[c.code]}
		if all := cur.codes["all"]; all > 0 {
			a.Share = a.Total / all
		}
		p.Answers = append(p.Answers, a)
	}

	cur.upstreamErrors = map[[2]string]float64{}
	if mf := byName["floodgate_upstream_errors_total"]; mf != nil {
		for _, m := range mf.Metric {
			l := labelsOf(m)
			k := [2]string{l["upstream"], l["kind"]}
			cur.upstreamErrors[k] += value(m)
			if v := value(m); v > 0 {
				p.Upstreams = append(p.Upstreams, upstreamRow{Upstream: k[0], Kind: k[1], Total: v})
			}
		}
	}

	s := &p.Store
	s.Kind = "memory"
	if _, ok := byName["floodgate_redis_up"]; ok {
		s.Kind = "redis"
	}
	s.Errors, _ = single(byName, "floodgate_store_errors_total")
	cur.storeErrors = s.Errors
	var okKeys, okMax bool
	s.Keys, okKeys = single(byName, "floodgate_store_keys")
	s.MaxKeys, okMax = single(byName, "floodgate_store_max_keys")
	s.HasKeys = okKeys && okMax
	if s.HasKeys && s.MaxKeys > 0 {
		s.Fill = s.Keys / s.MaxKeys
	}
	s.Evictions, _ = single(byName, "floodgate_store_evictions_total")
	s.Expired, _ = single(byName, "floodgate_store_expired_total")
	cur.evictions = s.Evictions
	if mf := byName["floodgate_store_duration_seconds"]; mf != nil && len(mf.Metric) == 1 && mf.Metric[0].Histogram != nil {
		hg := mf.Metric[0].Histogram
		cur.latCount, cur.latSum = float64(hg.GetSampleCount()), hg.GetSampleSum()
		for _, b := range hg.Bucket {
			cur.latBounds = append(cur.latBounds, b.GetUpperBound())
			cur.latCum = append(cur.latCum, float64(b.GetCumulativeCount()))
		}
		s.Sampled = cur.latCount
		if cur.latCount > 0 {
			s.HasLatency = true
			s.Mean = cur.latSum / cur.latCount
			s.P50 = quantile(0.5, cur.latBounds, cur.latCum, cur.latCount)
			s.P99 = quantile(0.99, cur.latBounds, cur.latCum, cur.latCount)
		}
	}
	if mf := byName["floodgate_store_degraded_decisions_total"]; mf != nil {
		for _, m := range mf.Metric {
			if v := value(m); v > 0 {
				s.Degraded = append(s.Degraded, metricRow{Name: mf.GetName(), Labels: labelString(m), Value: v})
			}
		}
	}
	shown := map[string]bool{
		"floodgate_store_errors_total": true, "floodgate_store_keys": true, "floodgate_store_max_keys": true,
		"floodgate_store_evictions_total": true, "floodgate_store_expired_total": true,
		"floodgate_store_duration_seconds": true, "floodgate_store_degraded_decisions_total": true,
	}
	for _, prefix := range []string{"floodgate_store_", "floodgate_redis_"} {
		for _, mr := range seriesWithPrefix(sortedFamilies(byName), prefix) {
			if !shown[mr.Name] {
				s.Other = append(s.Other, mr)
			}
		}
	}
	return cur
}

// rates compares cur with the oldest sample of the last rateWindow, then
// keeps cur for later views.
func (d *dashboard) rates(p *page, cur sample) {
	d.mu.Lock()
	defer d.mu.Unlock()
	keep := d.samples[:0]
	for _, s := range d.samples {
		if cur.at.Sub(s.at) <= rateWindow {
			keep = append(keep, s)
		}
	}
	d.samples = keep
	if len(d.samples) > 0 {
		old := d.samples[0]
		if dt := cur.at.Sub(old.at); dt >= rateMinAge {
			secs := dt.Seconds()
			p.RateOver = dt.Round(time.Second).String()
			all := cur.codes["all"] - old.codes["all"]
			for i := range p.Answers {
				a := &p.Answers[i]
				n := cur.codes[a.Code] - old.codes[a.Code]
				a.Rate, a.HasRate = max(n, 0)/secs, true
				if all > 0 {
					a.RecentShare = max(n, 0) / all
				}
			}
			var failing []string
			for i := range p.Upstreams {
				u := &p.Upstreams[i]
				n := max(cur.upstreamErrors[[2]string{u.Upstream, u.Kind}]-old.upstreamErrors[[2]string{u.Upstream, u.Kind}], 0)
				u.Rate, u.HasRate = n/secs, true
				if n > 0 {
					failing = append(failing, fmt.Sprintf("%s (%s, %s)", u.Upstream, u.Kind, formatCount(uint64(n))))
				}
			}
			if len(failing) > 0 {
				p.Notices = append(p.Notices, fmt.Sprintf("Upstream failures in the last %s: %s. floodgate answers 502 or 504 in their place; /readyz stays ready.",
					p.RateOver, strings.Join(failing, "; ")))
			}
			p.Store.ErrorRate = max(cur.storeErrors-old.storeErrors, 0) / secs
			p.Store.EvictionRate = max(cur.evictions-old.evictions, 0) / secs
			p.Store.HasRate = true
			if n := cur.latCount - old.latCount; n > 0 && len(cur.latCum) == len(old.latCum) {
				diff := make([]float64, len(cur.latCum))
				for i := range diff {
					diff[i] = cur.latCum[i] - old.latCum[i]
				}
				p.Store.HasRecentLat = true
				p.Store.RecentMean = (cur.latSum - old.latSum) / n
				p.Store.RecentP99 = quantile(0.99, cur.latBounds, diff, n)
			}
		}
	}
	// One sample every couple of seconds is plenty, however many viewers.
	if n := len(d.samples); n == 0 || cur.at.Sub(d.samples[n-1].at) >= 2*time.Second {
		d.samples = append(d.samples, cur)
	}
}

// caps lists the concurrency caps of the configuration.
func caps(f *config.File, rows []ruleRow, byName map[string]*dto.MetricFamily) []capRow {
	var out []capRow
	refused := map[string]uint64{}
	for _, r := range rows {
		// A cap's own refusals; a shadow rule's would-blocks do not
		// tell a full cap from a limit.
		refused[r.Name] = r.Hour[rules.Unavailable] + r.Hour[rules.WouldBlock]
	}
	for _, rc := range f.Config.Rules {
		var c []string
		if rc.MaxInflight > 0 {
			c = append(c, fmt.Sprintf("%d in flight", rc.MaxInflight))
		}
		if rc.MaxInflightPerKey > 0 {
			c = append(c, fmt.Sprintf("%d in flight per key", rc.MaxInflightPerKey))
		}
		if len(c) > 0 {
			out = append(out, capRow{Kind: "rule", Name: rc.Name, Cap: strings.Join(c, ", "),
				Refused: formatCount(refused[rc.Name]) + " in the last hour"})
		}
	}
	route503 := map[string]float64{}
	if mf := byName["floodgate_requests_total"]; mf != nil {
		for _, m := range mf.Metric {
			if l := labelsOf(m); l["code"] == "503" {
				route503[l["route"]] += value(m)
			}
		}
	}
	for _, rc := range f.Config.Routes {
		if rc.MaxInflight > 0 {
			out = append(out, capRow{Kind: "route", Name: rc.Name, Cap: fmt.Sprintf("%d in flight", rc.MaxInflight),
				Refused: formatCount(uint64(route503[rc.Name])) + " 503s since start (all causes)"})
		}
	}
	return out
}

// quantile estimates the q-quantile of a histogram from its cumulative
// bucket counts, as PromQL's histogram_quantile does: linear within the
// bucket, and the highest finite bound for the +Inf bucket.
func quantile(q float64, bounds, cum []float64, count float64) float64 {
	if count <= 0 || len(bounds) == 0 {
		return math.NaN()
	}
	rank := q * count
	lower, below := 0.0, 0.0
	for i, ub := range bounds {
		if cum[i] >= rank {
			in := cum[i] - below
			if in <= 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-below)/in
		}
		lower, below = ub, cum[i]
	}
	return bounds[len(bounds)-1]
}

// chart is an inline SVG bar chart of enforced refusals (blocked and
// denied) and shadow would-blocks per minute over the last hour.
type chart struct {
	ID, Title, Desc string
	Width, Height   int
	PlotTop         int
	PlotBottom      int
	YMax            string
	Bars            []bar
	Empty           bool
}

type bar struct {
	X, Y, W, H float64
	Hatched    bool // would-block: hatched, so the series differ without colour
}

const minutes = 60

// perMinute sums the ring's buckets of decisions o… into minutes, oldest
// first.
func perMinute(buckets [][rules.NumOutcomes]uint64, bucket time.Duration, os ...rules.Outcome) []uint64 {
	out := make([]uint64, minutes)
	per := int(time.Minute / bucket)
	n := len(buckets)
	for j, b := range buckets {
		m := minutes - 1 - (n-1-j)/per
		if m < 0 {
			continue
		}
		for _, o := range os {
			out[m] += b[o]
		}
	}
	return out
}

// newChart lays out the two series as grouped bars.
func newChart(id, title string, width, height int, enforced, shadow []uint64) chart {
	c := chart{ID: id, Title: title, Width: width, Height: height, PlotTop: 8, PlotBottom: height - 20}
	var peak, sumE, sumS uint64
	peakAt := 0
	for i := range enforced {
		sumE += enforced[i]
		sumS += shadow[i]
		if m := max(enforced[i], shadow[i]); m > peak {
			peak, peakAt = m, i
		}
	}
	c.Empty = peak == 0
	top := niceCeil(peak)
	c.YMax = formatCount(top)
	left, right := 44.0, float64(width)-4
	slot := (right - left) / minutes
	plotH := float64(c.PlotBottom - c.PlotTop)
	for i := range enforced {
		x := left + float64(i)*slot
		for k, v := range []uint64{enforced[i], shadow[i]} {
			if v == 0 {
				continue
			}
			h := plotH * float64(v) / float64(top)
			if h < 1.5 {
				h = 1.5 // a count of 1 stays visible
			}
			c.Bars = append(c.Bars, bar{
				X: round1(x + 0.5 + float64(k)*(slot-1)/2), Y: round1(float64(c.PlotBottom) - h),
				W: round1(max((slot-1)/2, 1)), H: round1(h), Hatched: k == 1,
			})
		}
	}
	if c.Empty {
		c.Desc = "No blocks, denials, unavailable answers or would-blocks in the last 60 minutes."
	} else {
		c.Desc = fmt.Sprintf("Last 60 minutes, per minute: %s enforced (blocked, denied or unavailable) and %s would-block in all; the busiest minute, %d minutes ago, had %s.",
			formatCount(sumE), formatCount(sumS), minutes-1-peakAt, formatCount(peak))
	}
	return c
}

func overviewChart(h telemetry.History) chart {
	enforced := make([]uint64, minutes)
	shadow := make([]uint64, minutes)
	for _, rh := range h.Rules {
		e := perMinute(rh.Buckets, h.Bucket, rules.Blocked, rules.Denied, rules.Unavailable)
		s := perMinute(rh.Buckets, h.Bucket, rules.WouldBlock)
		for i := range enforced {
			enforced[i] += e[i]
			shadow[i] += s[i]
		}
	}
	return newChart("overview", "Enforced blocks and shadow would-blocks per minute, all rules", 1180, 200, enforced, shadow)
}

func ruleChart(name string, rh telemetry.RuleHistory, bucket time.Duration) chart {
	return newChart("rule-"+name, "Rule "+name+": enforced and would-block per minute", 360, 110,
		perMinute(rh.Buckets, bucket, rules.Blocked, rules.Denied, rules.Unavailable), perMinute(rh.Buckets, bucket, rules.WouldBlock))
}

// niceCeil rounds n up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(n uint64) uint64 {
	if n <= 1 {
		return 1
	}
	p := uint64(1)
	for {
		for _, m := range []uint64{1, 2, 5} {
			if m*p >= n {
				return m * p
			}
		}
		p *= 10
	}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// Metric helpers.

func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.Label))
	for _, l := range m.Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.Label {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	return strings.Join(parts, ", ")
}

// value returns a counter's, gauge's or untyped metric's value; a
// histogram's or summary's sample count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	}
	return math.NaN()
}

// single returns the value of a family with one unlabelled series.
func single(byName map[string]*dto.MetricFamily, name string) (float64, bool) {
	mf := byName[name]
	if mf == nil || len(mf.Metric) == 0 {
		return 0, false
	}
	return value(mf.Metric[0]), true
}

func sortedFamilies(byName map[string]*dto.MetricFamily) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, mf := range byName {
		out = append(out, mf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

// seriesWithPrefix lists every series of the families whose name starts
// with prefix (Gather returns families sorted by name).
func seriesWithPrefix(fams []*dto.MetricFamily, prefix string) []metricRow {
	var out []metricRow
	for _, mf := range fams {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.Metric {
			out = append(out, metricRow{Name: mf.GetName(), Labels: labelString(m), Value: value(m)})
		}
	}
	return out
}

// Formatting.

// formatCount writes n with thin-space-free comma grouping: 12,345.
func formatCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// formatRate writes a per-second rate.
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0/s"
	case v < 0.01:
		return fmt.Sprintf("%.2f/min", v*60)
	case v < 10:
		return fmt.Sprintf("%.2f/s", v)
	}
	return fmt.Sprintf("%.0f/s", v)
}

// formatShare writes a fraction as a percentage.
func formatShare(v float64) string {
	switch {
	case v == 0:
		return "0%"
	case v < 0.001:
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", v*100)
}

// formatSeconds writes a duration in seconds with a fitting unit.
func formatSeconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "—"
	case s < 1e-6:
		return fmt.Sprintf("%.0f ns", s*1e9)
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.1f ms", s*1e3)
	}
	return fmt.Sprintf("%.2f s", s)
}
