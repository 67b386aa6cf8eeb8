package admin_test

// Checks of the operations kit under deploy/: the Prometheus alert rules
// pass `promtool check rules` and their unit tests, every Grafana query
// parses, and every metric the dashboard and the rules name is exported
// by a running floodgate and documented in docs/metrics.md.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

const (
	alertsFile  = "../../deploy/prometheus/floodgate-alerts.yml"
	grafanaFile = "../../deploy/grafana/floodgate.json"
	metricsDoc  = "../../docs/metrics.md"
)

// promtool returns the path of promtool, or fails the test saying how to
// install it; FLOODGATE_SKIP_PROMTOOL=1 turns a missing promtool into a
// skip.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("FLOODGATE_SKIP_PROMTOOL") == "1" {
		t.Skip("promtool is not installed and FLOODGATE_SKIP_PROMTOOL=1: skipping the promtool checks of deploy/prometheus")
	}
	t.Fatal("promtool is not installed: install it (Debian: apt-get install -y prometheus) " +
		"or set FLOODGATE_SKIP_PROMTOOL=1 to skip the promtool checks")
	return ""
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// alertRules is the part of a Prometheus rule file the tests read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for,omitempty"`
			Labels      map[string]string `yaml:"labels,omitempty"`
			Annotations map[string]string `yaml:"annotations,omitempty"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readAlerts(t *testing.T) alertRules {
	t.Helper()
	data, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	if err := yaml.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return r
}

func TestAlertRulesPromtool(t *testing.T) {
	pt := promtool(t)
	out := runTool(t, pt, "check", "rules", alertsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules:\n%s", out)
	}

	// Unit tests of the rules' expressions and durations. The annotations
	// are prose: they are left out of the copy tested, so that rewording
	// one does not break the test.
	r := readAlerts(t)
	names := map[string]bool{}
	for gi := range r.Groups {
		for ri := range r.Groups[gi].Rules {
			names[r.Groups[gi].Rules[ri].Alert] = true
			r.Groups[gi].Rules[ri].Annotations = nil
		}
	}
	for _, want := range []string{
		"FloodgateRateLimitedAnswersRising", "FloodgateStoreErrors", "FloodgateKeyTableNearlyFull",
		"FloodgateStoreEvicting", "FloodgateConfigReloadFailed", "FloodgateRedisDown",
		"FloodgatePlanUsageNearLimit", "FloodgateUpstreamFailing", "FloodgateUpstreamUnsolicited",
	} {
		if !names[want] {
			t.Errorf("alert %s is missing", want)
		}
	}
	dir := t.TempDir()
	stripped, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), stripped, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yml"), []byte(alertUnitTests), 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, pt, "test", "rules", filepath.Join(dir, "rules_test.yml"))
}

// alertUnitTests is a `promtool test rules` file for the rules (with
// annotations removed). Instance a is in trouble, instance b is fine.
const alertUnitTests = `
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'floodgate_store_keys{job="fg",instance="a"}'
        values: '950x30'
      - series: 'floodgate_store_max_keys{job="fg",instance="a"}'
        values: '1000x30'
      - series: 'floodgate_store_keys{job="fg",instance="b"}'
        values: '500x30'
      - series: 'floodgate_store_max_keys{job="fg",instance="b"}'
        values: '1000x30'
      - series: 'floodgate_store_evictions_total{job="fg",instance="a"}'
        values: '0+60x30'
      - series: 'floodgate_store_evictions_total{job="fg",instance="b"}'
        values: '0x30'
      - series: 'floodgate_store_errors_total{job="fg",instance="a"}'
        values: '0+30x30'
      - series: 'floodgate_store_errors_total{job="fg",instance="b"}'
        values: '0x30'
      - series: 'floodgate_redis_up{job="fg",instance="a"}'
        values: '1 1 0x28'
      - series: 'floodgate_redis_up{job="fg",instance="b"}'
        values: '1x30'
      - series: 'floodgate_config_reloads_total{job="fg",instance="a",result="failure"}'
        values: '0 0 0 1x27'
      - series: 'floodgate_config_reloads_total{job="fg",instance="b",result="failure"}'
        values: '0x30'
      - series: 'floodgate_config_last_reload_successful{job="fg",instance="a"}'
        values: '1 1 1 0x6 1x21'
      - series: 'floodgate_config_last_reload_successful{job="fg",instance="b"}'
        values: '1x30'
      - series: 'floodgate_config_reloads_total{job="fg",instance="c",result="failure"}'
        values: '0 0 0 1x27'
      - series: 'floodgate_config_last_reload_successful{job="fg",instance="c"}'
        values: '1 1 1 0x27'
      - series: 'floodgate_config_info{job="fg",instance="a",hash="sha256:aaaaaaaaaaaaaaaa"}'
        values: '1x30'
      - series: 'floodgate_config_info{job="fg",instance="b",hash="sha256:bbbbbbbbbbbbbbbb"}'
        values: '1x30'
      - series: 'floodgate_plan_usage_ratio{job="fg",instance="a",client="openverse.org",plan="frontend"}'
        values: '0.5 0.6 0.7 0.85x27'
      - series: 'floodgate_plan_usage_ratio{job="fg",instance="a",client="lab",plan="standard"}'
        values: '0.3x30'
      - series: 'floodgate_upstream_errors_total{job="fg",instance="a",upstream="api",kind="refused"}'
        values: '0 0 0+120x28'
      - series: 'floodgate_upstream_errors_total{job="fg",instance="a",upstream="api",kind="timeout"}'
        values: '0x30'
      - series: 'floodgate_upstream_errors_total{job="fg",instance="b",upstream="api",kind="refused"}'
        values: '0x30'
      - series: 'floodgate_upstream_unsolicited_total{job="fg",instance="a",upstream="api"}'
        values: '0 0 0 0 0 1x25'
      - series: 'floodgate_upstream_unsolicited_total{job="fg",instance="b",upstream="api"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: FloodgatePlanUsageNearLimit
      - eval_time: 10m
        alertname: FloodgatePlanUsageNearLimit
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a, client: openverse.org, plan: frontend}
      - eval_time: 10m
        alertname: FloodgateKeyTableNearlyFull
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a}
      - eval_time: 10m
        alertname: FloodgateStoreEvicting
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a}
      - eval_time: 10m
        alertname: FloodgateStoreErrors
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a}
      - eval_time: 3m
        alertname: FloodgateRedisDown
      - eval_time: 6m
        alertname: FloodgateRedisDown
        exp_alerts:
          - exp_labels: {severity: critical, job: fg, instance: a}
      - eval_time: 5m
        alertname: FloodgateConfigReloadFailed
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a, result: failure}
          - exp_labels: {severity: warning, job: fg, instance: c, result: failure}
      - eval_time: 25m
        alertname: FloodgateConfigReloadFailed
        exp_alerts:
          # c's file is still the rejected one; a's was fixed.
          - exp_labels: {severity: warning, job: fg, instance: c}
      - eval_time: 4m
        alertname: FloodgateUpstreamFailing
      - eval_time: 10m
        alertname: FloodgateUpstreamFailing
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a, upstream: api, kind: refused}
      - eval_time: 4m
        alertname: FloodgateUpstreamUnsolicited
      - eval_time: 6m
        alertname: FloodgateUpstreamUnsolicited
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a, upstream: api}
      - eval_time: 25m
        alertname: FloodgateUpstreamUnsolicited
      - eval_time: 20m
        alertname: FloodgateConfigDiffers
        exp_alerts:
          - exp_labels: {severity: warning, job: fg}

  # 10 answers/s throughout; from 7 h on, instances a and c also answer 5
  # 429s/s, where they answered none for the six hours before.
  - interval: 1m
    input_series:
      - series: 'floodgate_requests_total{job="fg",instance="a",route="api",code="200"}'
        values: '0+600x500'
      - series: 'floodgate_requests_total{job="fg",instance="a",route="api",code="429"}'
        values: '0x420 300+300x79'
      - series: 'floodgate_requests_total{job="fg",instance="b",route="api",code="200"}'
        values: '0+600x500'
      - series: 'floodgate_requests_total{job="fg",instance="b",route="api",code="429"}'
        values: '0+6x500'
      # Instance c answered no 429 until 7 h (its 429 series starts then,
      # as floodgate's does at the first 429), then 5 a second.
      - series: 'floodgate_requests_total{job="fg",instance="c",route="api",code="200"}'
        values: '0+600x500'
      - series: 'floodgate_requests_total{job="fg",instance="c",route="api",code="429"}'
        values: '_x420 300+300x79'
    alert_rule_test:
      - eval_time: 425m
        alertname: FloodgateRateLimitedAnswersRising
      - eval_time: 440m
        alertname: FloodgateRateLimitedAnswersRising
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a}
          - exp_labels: {severity: warning, job: fg, instance: c}
      - eval_time: 440m
        alertname: FloodgateRateLimitedAnswersHigh
      - eval_time: 499m
        alertname: FloodgateRateLimitedAnswersHigh
        exp_alerts:
          - exp_labels: {severity: warning, job: fg, instance: a}
          - exp_labels: {severity: warning, job: fg, instance: c}
`

var (
	metricRE   = regexp.MustCompile(`\bfloodgate_[a-z0-9_]*[a-z0-9]\b`)
	grafanaVar = regexp.MustCompile(`\$\{?(__rate_interval|__interval|__range|job|instance|rule)\}?`)
)

// grafanaStrings returns every string in the dashboard JSON, and the
// PromQL expressions among them (targets' and annotations' expr).
func grafanaStrings(t *testing.T) (all, exprs []string) {
	t.Helper()
	data, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(k, e)
			}
		case []any:
			for _, e := range v {
				walk(key, e)
			}
		case string:
			all = append(all, v)
			if key == "expr" {
				exprs = append(exprs, v)
			}
		}
	}
	walk("", v)
	return all, exprs
}

// TestGrafanaDashboard checks the dashboard's shape and that every query
// parses as PromQL (by promtool, once Grafana's variables are filled in).
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int                      `json:"id"`
			Type    string                   `json:"type"`
			Title   string                   `json:"title"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("title %q, uid %q: want both", d.Title, d.UID)
	}
	ids := map[int]bool{}
	var titles []string
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d repeated", p.ID)
		}
		ids[p.ID] = true
		titles = append(titles, p.Title)
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v out of the 24-column grid", p.Title, p.GridPos)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource %q, want ${datasource}", p.Title, tg.Datasource.UID)
			}
		}
	}
	joined := strings.Join(titles, "\n")
	for _, want := range []string{
		"Enforced blocks vs shadow would-blocks per rule", "Decisions by rule", "429 / 403 / 503 answers per second",
		"Upstream latency by route", "Upstream failures per second", "Store errors per second", "Store latency", "Key table fill",
		"Evictions and expirations per second", "Configuration loads", "Configuration hash by instance", "In-flight requests",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("no panel titled %q", want)
		}
	}

	pt := promtool(t)
	_, exprs := grafanaStrings(t)
	if len(exprs) < 20 {
		t.Fatalf("only %d queries found in %s", len(exprs), grafanaFile)
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: grafana-queries\n    rules:\n")
	for i, e := range exprs {
		e = grafanaVar.ReplaceAllStringFunc(e, func(v string) string {
			if strings.Contains(v, "__") {
				return "5m"
			}
			return ".*"
		})
		fmt.Fprintf(&b, "      - record: grafana:query_%d\n        expr: %s\n", i, strconvQuote(e))
	}
	file := filepath.Join(t.TempDir(), "grafana-queries.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, pt, "check", "rules", file)
}

// strconvQuote quotes s for YAML (a JSON string is a YAML string).
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestDeployMetricsExist: every floodgate metric named by the Grafana
// dashboard or the alert rules is exported by a running gateway that has
// seen traffic, and is documented in docs/metrics.md.
func TestDeployMetricsExist(t *testing.T) {
	used := map[string][]string{} // metric → where
	all, _ := grafanaStrings(t)
	for _, s := range all {
		for _, m := range metricRE.FindAllString(s, -1) {
			used[m] = append(used[m], "grafana")
		}
	}
	r := readAlerts(t)
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			texts := []string{rule.Expr}
			for _, a := range rule.Annotations {
				texts = append(texts, a)
			}
			for _, s := range texts {
				for _, m := range metricRE.FindAllString(s, -1) {
					used[m] = append(used[m], "alert "+rule.Alert)
				}
			}
		}
	}
	if len(used) < 15 {
		t.Fatalf("only %d metric names found in deploy/: %v", len(used), used)
	}

	exported := map[string]bool{}
	for _, text := range []string{scrapeMemoryGateway(t), scrapeRedisGateway(t)} {
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			line := sc.Text()
			if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
				exported[f[2]] = true // a family's name: a histogram's base name
				continue
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if i := strings.IndexAny(line, "{ "); i > 0 {
				exported[line[:i]] = true
			}
		}
	}
	doc, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(used))
	for m := range used {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		if !exported[m] {
			t.Errorf("%s (used by %s) is not exported by floodgate (no series or family after traffic)", m, strings.Join(dedupe(used[m]), ", "))
		}
		family := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && exported[base+"_bucket"] {
				family = base
			}
		}
		if !strings.Contains(string(doc), "`"+family+"`") {
			t.Errorf("%s (used by %s) is not documented in docs/metrics.md", family, strings.Join(dedupe(used[m]), ", "))
		}
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// kitYAML exercises every kind of series: shadow and enforced rules, a
// candidate limit, a cost, a concurrency cap, a route with upstream
// latency, and an upstream with floodgate's own credentials.
const kitYAML = `
store: {url: %[1]q, timeout: 50ms}
upstreams:
  api: {url: %[2]q}
  tokened: {url: %[2]q, auth: {type: client_credentials, client_id: kit, client_secret: kit-client-secret}}
routes:
  - {name: tokened, path: "/t/{rest...}", upstream: tokened}
  - {name: csv, path: "/csv/{id}", upstream: api}
  - {name: api, path: /, upstream: api}
rules:
  - {name: shadow-requests, action: count, limits: [5/1m], candidates: [3/1m]}
  - {name: bots, when: "request.user_agent.contains('GPTBot')", action: deny}
  - {name: per-ip, limits: [10/1m], failure_policy: fail_closed}
  - {name: cap-csv, when: "route.name == 'csv'", key: [], max_inflight: 2}
  - {name: budget, when: "route.name == 'csv'", cost: upstream_seconds, limits: [900/1h]}
  - {name: plan, key: [api_client], limits_from: plan}
sessions: {secret: kit-signing-secret-0123456789-0123456789}
api_clients:
  plans: {frontend: [100/1m]}
  clients: [{id: web, plan: frontend, token_sha256: dcaa19ccd9eff64425edf7d38701e2cfe9f231c8216df785f5fbb400b1293e7b}]
`

// scrapeGateway runs traffic through a gateway on store url and returns
// its /metrics exposition, read through the admin handler.
func scrapeGateway(t *testing.T, storeURL string) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(up.Close)
	yml := fmt.Sprintf(kitYAML, storeURL, up.URL)
	f, err := config.Parse("kit.yaml", []byte(yml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	logger := slog.New(slog.DiscardHandler)
	store, closer, err := gateway.NewStore(&f.Config.Store, m, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closer.Close() })
	srv, problems := gateway.NewServer(f, []byte(yml), gateway.Options{Store: store, Metrics: m, Logger: logger})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	send := func(n int, ip, path, ua string) {
		for range n {
			r := httptest.NewRequest("GET", path, nil)
			r.RemoteAddr = ip + ":4000"
			r.Header.Set("User-Agent", ua)
			r.Header.Set("Authorization", "Bearer kit-token") // API client "web"
			srv.ServeHTTP(httptest.NewRecorder(), r)
		}
	}
	send(20, "198.51.100.1", "/x", "curl/8.5.0")
	send(3, "198.51.100.2", "/csv/1", "GPTBot/1.2")
	send(20, "198.51.100.3", "/csv/2", "python-requests/2.31.0")
	h := admin.Handler(admin.Options{Gatherer: m.Registry, Server: srv})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != 200 {
		t.Fatalf("/metrics: %d", w.Code)
	}
	return w.Body.String()
}

func scrapeMemoryGateway(t *testing.T) string { return scrapeGateway(t, "memory") }

// scrapeRedisGateway scrapes a gateway whose Redis is down (nothing
// listens on port 1): the Redis metrics and the store's failures.
func scrapeRedisGateway(t *testing.T) string { return scrapeGateway(t, "redis://127.0.0.1:1") }
