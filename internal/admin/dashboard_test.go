package admin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

const dashToken = "0123456789abcdef-dashboard"

// dashYAML has one rule of each kind the dashboard tells apart.
const dashYAML = `
%s
store: {url: memory, max_keys: 2048}
upstreams: {api: {url: "%s"}}
routes:
  - {name: csv, path: "/csv/{id}", upstream: api, max_inflight: 8}
  - {name: api, path: /, upstream: api}
rules:
  - {name: shadow-requests, action: count, limits: [5/1m], candidates: [4/1m]}
  - {name: bots, when: "request.user_agent.contains('GPTBot')", action: deny}
  - {name: per-ip, limits: [3/1m], candidates: [2/1m, 6/1m], retry_after: 300s}
  - {name: cap-builds, when: "route.name == 'csv'", key: [], max_inflight: 2}
`

type dashEnv struct {
	h   http.Handler
	srv *gateway.Server
	m   *telemetry.Metrics
	up  *httptest.Server
}

// newDashEnv builds a gateway in front of an echo upstream, and the admin
// handler around it. adminLine is the config's admin: line ("" for none).
func newDashEnv(t *testing.T, adminLine string, ready func(context.Context) error) *dashEnv {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(up.Close)
	yaml := strings.Replace(strings.Replace(dashYAML, "%s", adminLine, 1), "%s", up.URL, 1)
	vars := map[string]string{"TOKEN": dashToken}
	f, err := config.Parse("dash.yaml", []byte(yaml), "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	// The store's clock stands still: every request of a test falls in
	// the same window of every limit, so the counts are exact.
	t0 := time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
		Store: gateway.NewMemoryStore(f.Config.Store.MaxKeys, func() time.Time { return t0 }, m), Metrics: m, Logger: slog.New(slog.DiscardHandler),
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return &dashEnv{h: Handler(Options{Gatherer: m.Registry, Server: srv, Ready: ready}), srv: srv, m: m, up: up}
}

// send makes n requests from ip through the gateway.
func (e *dashEnv) send(t *testing.T, n int, ip, path, ua string) {
	t.Helper()
	for range n {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = ip + ":4000"
		if ua != "" {
			r.Header.Set("User-Agent", ua)
		}
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, r)
	}
}

func get(h http.Handler, path, auth, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	r.Host = "127.0.0.1:9090" // the default admin listener's address
	r.RemoteAddr = remote
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestDashboardAccess: the page reveals as much as /admin/config and is
// guarded the same way: the token, or a loopback peer when there is none.
func TestDashboardAccess(t *testing.T) {
	withTok := newDashEnv(t, `admin: {token: "${TOKEN}"}`, nil)
	noTok := newDashEnv(t, "", nil)
	for _, tc := range []struct {
		name   string
		env    *dashEnv
		path   string
		auth   string
		remote string
		want   int
	}{
		{"token set, none sent, remote peer", withTok, "/admin/", "", "203.0.113.9:5000", 401},
		{"token set, none sent, loopback peer", withTok, "/admin/", "", "127.0.0.1:5000", 401},
		{"token set, wrong token", withTok, "/admin/", "Bearer not-the-token-at-all", "203.0.113.9:5000", 401},
		{"token set, right token, remote peer", withTok, "/admin/", "Bearer " + dashToken, "203.0.113.9:5000", 200},
		{"no token, remote peer", noTok, "/admin/", "", "203.0.113.9:5000", 403},
		{"no token, remote peer claiming a token", noTok, "/admin/", "Bearer " + dashToken, "198.51.100.1:5000", 403},
		{"no token, loopback peer", noTok, "/admin/", "", "127.0.0.1:5000", 200},
		{"no token, IPv6 loopback peer", noTok, "/admin/", "", "[::1]:5000", 200},
		{"unknown admin path", noTok, "/admin/nope", "", "127.0.0.1:5000", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := get(tc.env.h, tc.path, tc.auth, tc.remote)
			if w.Code != tc.want {
				t.Fatalf("GET %s = %d, want %d\n%s", tc.path, w.Code, tc.want, w.Body)
			}
			body := w.Body.String()
			if tc.want != 200 {
				if strings.Contains(body, "shadow-requests") || strings.Contains(body, "sha256:") {
					t.Errorf("a refused request saw the dashboard:\n%s", body)
				}
				return
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
		})
	}
	if w := get(noTok.h, "/admin", "", "127.0.0.1:5000"); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/admin/" {
		t.Errorf("GET /admin = %d Location %q, want 301 to /admin/", w.Code, w.Header().Get("Location"))
	}
}

// cellRE finds the rule table's counts.
var cellRE = regexp.MustCompile(`data-rule="([^"]+)" data-window="(hour|total)" data-decision="([a-z_]+)">([0-9,]+)<`)

// cells returns the rule table of a page: rule → window → decision → count.
func cells(t *testing.T, page string) map[string]map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]map[string]int{}
	for _, m := range cellRE.FindAllStringSubmatch(page, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[4], ",", ""))
		if err != nil {
			t.Fatalf("cell %q: %v", m[0], err)
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]map[string]int{}
		}
		if out[m[1]][m[2]] == nil {
			out[m[1]][m[2]] = map[string]int{}
		}
		out[m[1]][m[2]][m[3]] = n
	}
	return out
}

func TestDashboardShowsDecisions(t *testing.T) {
	e := newDashEnv(t, "", nil)
	e.send(t, 8, "198.51.100.1", "/x", "")               // per-ip: 3 allowed, 5 blocked; shadow: 5 allowed, 3 would-block
	e.send(t, 2, "198.51.100.2", "/x", "GPTBot/1.2")     // bots: 2 denied
	e.send(t, 1, "198.51.100.3", "/csv/1", "curl/8.5.0") // the cap: allowed
	w := get(e.h, "/admin/", "", "127.0.0.1:5000")
	if w.Code != 200 {
		t.Fatalf("GET /admin/ = %d\n%s", w.Code, w.Body)
	}
	page := w.Body.String()
	got := cells(t, page)
	for _, c := range []struct {
		rule, decision string
		want           int
	}{
		{"shadow-requests", "allowed", 8},
		{"shadow-requests", "would_block", 3},
		{"bots", "denied", 2},
		{"per-ip", "allowed", 4},
		{"per-ip", "blocked", 5},
		{"cap-builds", "allowed", 1},
		{"cap-builds", "blocked", 0},
	} {
		for _, window := range []string{"hour", "total"} {
			if n := got[c.rule][window][c.decision]; n != c.want {
				t.Errorf("%s %s %s = %d, want %d", c.rule, window, c.decision, n, c.want)
			}
		}
	}
	for _, want := range []string{
		`<html lang="en">`,
		`data-mode="enforce"`,
		e.srv.Hash(),
		`<meta http-equiv="refresh" content="10">`,
		`<caption>`, `scope="col"`, `scope="row"`,
		`role="img" aria-labelledby="overview-title overview-desc"`,
		`<title id="rule-per-ip-title">`,
		`data-status="not-configured"`, // sessions and plans
		`<label for="refresh">`,
		`<th scope="row">429</th>`,
		`max_inflight 2`, // the cap-builds rule's limit column
		`>csv</th>`,      // the capped route
		`data-metric="floodgate_store_keys"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`<li><a href="#rule-per-ip">per-ip</a>: 5 blocked`).MatchString(page) {
		t.Error("per-ip is not first among the top rules")
	}
	// Self-contained: one inline script (the mode switch), allowed by its
	// hash, nothing fetched from anywhere.
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) != 1 || strings.Count(strings.ToLower(page), "<script") != 1 {
		t.Errorf("page has %d scripts, want the mode switch's, inline", strings.Count(strings.ToLower(page), "<script"))
	} else if sum := sha256.Sum256([]byte(scripts[0][1])); !strings.Contains(w.Header().Get("Content-Security-Policy"),
		"script-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
		t.Errorf("the script's hash is not in the Content-Security-Policy %q", w.Header().Get("Content-Security-Policy"))
	}
	if m := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*"(https?:)?//`).FindString(page); m != "" {
		t.Errorf("page refers to another host: %s", m)
	}
	if m := regexp.MustCompile(`(?i)url\(\s*['"]?(https?:)?//`).FindString(page); m != "" {
		t.Errorf("style sheet loads from another host: %s", m)
	}
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	// No client address, ever.
	for _, ip := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		if strings.Contains(page, ip) {
			t.Errorf("page shows client address %s", ip)
		}
	}
}

// candCellRE finds the counts of the rules table's candidate rows, and
// the share of the rule's matched requests that follows a would-block.
var candCellRE = regexp.MustCompile(`data-rule="([^"]+)" data-candidate="([^"]+)" data-window="(hour|total)" data-decision="([a-z_]+)">([0-9,]+)(?:<span class="share">([0-9.<]+%) of matched</span>)?<`)

// candidateCells returns the candidate rows of a page: "rule candidate"
// → "window decision" → the count, and "window share" → the share.
func candidateCells(t *testing.T, page string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, m := range candCellRE.FindAllStringSubmatch(page, -1) {
		k := m[1] + " " + m[2]
		if out[k] == nil {
			out[k] = map[string]string{}
		}
		out[k][m[3]+" "+m[4]] = m[5]
		if m[6] != "" {
			out[k][m[3]+" share"] = m[6]
		}
	}
	return out
}

// TestDashboardShowsCandidates: each candidate limit of a rule has a row
// under the rule's, with what it would have decided for the requests the
// rule matched, over the last hour and since start, and the share of
// those requests it would have blocked.
func TestDashboardShowsCandidates(t *testing.T) {
	e := newDashEnv(t, "", nil)
	e.send(t, 8, "198.51.100.1", "/x", "")               // per-ip: 3 allowed, 5 blocked; 2/1m: 2 allowed, 6 would-block; 6/1m: 6 and 2
	e.send(t, 1, "198.51.100.3", "/csv/1", "curl/8.5.0") // per-ip and both candidates: allowed
	e.send(t, 2, "198.51.100.2", "/x", "GPTBot/1.2")     // denied by bots, before per-ip: not matched
	page := get(e.h, "/admin/", "", "127.0.0.1:5000").Body.String()
	if got := cells(t, page)["per-ip"]["hour"]; got["allowed"] != 4 || got["blocked"] != 5 {
		t.Fatalf("per-ip last hour = %v, want 4 allowed and 5 blocked", got)
	}
	want := map[string]map[string]string{ // shadow-requests matched 11 requests, per-ip 9
		"shadow-requests 4/1m": { // 4 of 198.51.100.1's 8
			"hour allowed": "7", "hour would_block": "4", "hour share": "36.4%",
			"total allowed": "7", "total would_block": "4", "total share": "36.4%",
		},
		"per-ip 2/1m": {
			"hour allowed": "3", "hour would_block": "6", "hour share": "66.7%",
			"total allowed": "3", "total would_block": "6", "total share": "66.7%",
		},
		"per-ip 6/1m": {
			"hour allowed": "7", "hour would_block": "2", "hour share": "22.2%",
			"total allowed": "7", "total would_block": "2", "total share": "22.2%",
		},
	}
	if diff := cmp.Diff(candidateCells(t, page), want); diff != "" {
		t.Errorf("candidate rows (-got +want):\n%s", diff)
	}
	// Each under its rule, in the order configured.
	rows := regexp.MustCompile(`<tr (?:class="candidate" )?data-rule="([^"]+)"(?: data-candidate="([^"]+)")?`).FindAllStringSubmatch(page, -1)
	var order []string
	for _, m := range rows {
		order = append(order, strings.TrimSpace(m[1]+" "+m[2]))
	}
	if diff := cmp.Diff(order, []string{"shadow-requests", "shadow-requests 4/1m", "bots", "per-ip", "per-ip 2/1m", "per-ip 6/1m", "cap-builds"}); diff != "" {
		t.Errorf("rules table rows (-got +want):\n%s", diff)
	}
	if strings.Contains(page, "198.51.100.") {
		t.Error("page shows a client address")
	}
}

// TestDashboardCandidatesAcrossReload: a candidate the reload keeps keeps
// its counts, a new one starts at 0, one the reload took away is no
// longer shown, and a rule the reload removed keeps its candidates' last
// hour next to its own.
func TestDashboardCandidatesAcrossReload(t *testing.T) {
	e := newDashEnv(t, "", nil)
	e.send(t, 8, "198.51.100.1", "/x", "")
	yaml := strings.Replace(strings.Replace(strings.Replace(dashYAML, "%s", "", 1), "%s", e.up.URL, 1),
		"  - {name: shadow-requests, action: count, limits: [5/1m], candidates: [4/1m]}\n", "", 1)
	yaml = strings.Replace(yaml, "candidates: [2/1m, 6/1m]", "candidates: [6/1m, 10/1m]", 1)
	f, err := config.Parse("dash.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if _, problems := e.srv.Reload(f, []byte(yaml)); len(problems) > 0 {
		t.Fatal(problems)
	}
	e.send(t, 1, "198.51.100.4", "/x", "")
	page := get(e.h, "/admin/", "", "127.0.0.1:5000").Body.String()
	want := map[string]map[string]string{ // per-ip matched 9 requests
		"per-ip 6/1m": {
			"hour allowed": "7", "hour would_block": "2", "hour share": "22.2%",
			"total allowed": "7", "total would_block": "2", "total share": "22.2%",
		},
		"per-ip 10/1m": {
			"hour allowed": "1", "hour would_block": "0", "hour share": "0%",
			"total allowed": "1", "total would_block": "0", "total share": "0%",
		},
		"shadow-requests 4/1m": { // removed: its series went with it
			"hour allowed": "4", "hour would_block": "4", "hour share": "50.0%",
		},
	}
	if diff := cmp.Diff(candidateCells(t, page), want); diff != "" {
		t.Errorf("candidate rows after a reload (-got +want):\n%s", diff)
	}
	if !regexp.MustCompile(`<tr class="candidate" data-rule="shadow-requests" data-candidate="4/1m">(?s:.*?)no series \(removed\)`).MatchString(page) {
		t.Error("the removed rule's candidate does not say its series went")
	}
}

// TestDashboardCandidateShareSinceAdded: a candidate added by a reload
// counted only the requests that came after it; its share is of those,
// not of everything its rule matched before it existed, which would make
// a threshold being sized look harmless.
func TestDashboardCandidateShareSinceAdded(t *testing.T) {
	e := newDashEnv(t, "", nil)
	for i := range 5 { // per-ip matches 5 requests, one from each address
		e.send(t, 1, "198.51.100."+strconv.Itoa(10+i), "/x", "")
	}
	yaml := strings.Replace(strings.Replace(dashYAML, "%s", "", 1), "%s", e.up.URL, 1)
	yaml = strings.Replace(yaml, "candidates: [2/1m, 6/1m]", "candidates: [2/1m, 6/1m, 1/1m]", 1)
	f, err := config.Parse("dash.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if _, problems := e.srv.Reload(f, []byte(yaml)); len(problems) > 0 {
		t.Fatal(problems)
	}
	e.send(t, 2, "198.51.100.4", "/x", "") // 1/1m: 1 allowed, 1 would-block
	page := get(e.h, "/admin/", "", "127.0.0.1:5000").Body.String()
	got := candidateCells(t, page)["per-ip 1/1m"]
	want := map[string]string{
		"hour allowed": "1", "hour would_block": "1", "hour share": "50.0%",
		"total allowed": "1", "total would_block": "1", "total share": "50.0%",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("candidate 1/1m added by a reload (-got +want):\n%s", diff)
	}
}

// TestDashboardRefresh: ?refresh=0 turns the automatic refresh off
// (WCAG 2.2.1); nonsense is refused.
func TestDashboardRefresh(t *testing.T) {
	e := newDashEnv(t, "", nil)
	page := get(e.h, "/admin/?refresh=0", "", "127.0.0.1:1").Body.String()
	if strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "automatic refresh is off") {
		t.Error("refresh=0 still refreshes")
	}
	if page := get(e.h, "/admin/?refresh=30", "", "127.0.0.1:1").Body.String(); !strings.Contains(page, `content="30"`) {
		t.Error("refresh=30 not applied")
	}
	for _, bad := range []string{"-1", "abc", "3601"} {
		if w := get(e.h, "/admin/?refresh="+bad, "", "127.0.0.1:1"); w.Code != 400 {
			t.Errorf("refresh=%s: %d, want 400", bad, w.Code)
		}
	}
}

func TestDashboardLogOnlyAndNotReady(t *testing.T) {
	e := newDashEnv(t, "", func(context.Context) error { return errors.New("store: connection refused") })
	e.srv.SetMode(true)
	e.send(t, 1, "198.51.100.2", "/x", "GPTBot/1.2")
	page := get(e.h, "/admin/", "", "127.0.0.1:1").Body.String()
	if !strings.Contains(page, `data-mode="log-only"`) {
		t.Error("mode log-only not shown")
	}
	if got := cells(t, page)["bots"]["hour"]; got["would_block"] != 1 || got["denied"] != 0 {
		t.Errorf("bots in log-only = %v, want one would-block and no denial", got)
	}
	if !strings.Contains(page, "not ready: store: connection refused") {
		t.Error("readiness failure not shown")
	}
}

// TestDashboardStoreDown: a store that does not answer is a notice on a
// ready gateway's dashboard.
func TestDashboardStoreDown(t *testing.T) {
	e := newDashEnv(t, "", nil)
	e.h = Handler(Options{Gatherer: e.m.Registry, Server: e.srv,
		Store: func(context.Context) error { return errors.New("redis unavailable (store.failure_policy fail_closed)") }})
	page := get(e.h, "/admin/", "", "127.0.0.1:1").Body.String()
	if !strings.Contains(page, "The store does not answer: redis unavailable (store.failure_policy fail_closed)") {
		t.Error("the store's error is not on the dashboard")
	}
	if !strings.Contains(page, "not answering: redis unavailable") {
		t.Error("the store's health does not say it is not answering")
	}
	if strings.Contains(page, "not ready") {
		t.Error("the dashboard calls the gateway not ready for the store's error")
	}
}

// TestDashboardRates: the second view turns counter differences into
// rates, over the time between the views.
func TestDashboardRates(t *testing.T) {
	e := newDashEnv(t, "", nil)
	clk := struct {
		sync.Mutex
		t time.Time
	}{t: time.Now()}
	d := newDashboard(Options{Gatherer: e.m.Registry, Server: e.srv})
	d.now = func() time.Time { clk.Lock(); defer clk.Unlock(); return clk.t }
	view := func() string {
		w := httptest.NewRecorder()
		d.ServeHTTP(w, httptest.NewRequest("GET", "/admin/", nil))
		return w.Body.String()
	}
	e.send(t, 3, "198.51.100.1", "/x", "")
	if page := view(); !strings.Contains(page, "after the next refresh") {
		t.Error("first view shows a rate")
	}
	e.send(t, 10, "198.51.100.1", "/x", "") // 10 more 429s
	clk.Lock()
	clk.t = clk.t.Add(10 * time.Second)
	clk.Unlock()
	page := view()
	if !strings.Contains(page, "rates over the last 10s") {
		t.Errorf("second view: no rate interval")
	}
	row := regexp.MustCompile(`<tr data-code="429">.*</tr>`).FindString(page)
	if !strings.Contains(row, ">1.00/s<") || !strings.Contains(row, ">100.0%<") {
		t.Errorf("429 row = %s, want 1.00/s and a recent share of 100%%", row)
	}
}

// TestDashboardUpstreamDown: an upstream that refuses every request
// shows on the page as 502s, as failures by upstream and kind, and, once
// the refresh brings rates, as a notice at the top; /readyz stays ready,
// so the page is where the operator sees it.
func TestDashboardUpstreamDown(t *testing.T) {
	e := newDashEnv(t, "", nil)
	clk := struct {
		sync.Mutex
		t time.Time
	}{t: time.Now()}
	d := newDashboard(Options{Gatherer: e.m.Registry, Server: e.srv})
	d.now = func() time.Time { clk.Lock(); defer clk.Unlock(); return clk.t }
	view := func() string {
		w := httptest.NewRecorder()
		d.ServeHTTP(w, httptest.NewRequest("GET", "/admin/", nil))
		return w.Body.String()
	}
	if page := view(); !strings.Contains(page, `data-status="upstreams-ok"`) || strings.Contains(page, `id="upstream-table"`) {
		t.Error("before any failure, the page does not say that no upstream failed")
	}
	e.up.Close() // nothing listens at the upstream's address now
	e.send(t, 2, "198.51.100.1", "/x", "")
	page := view()
	if row := regexp.MustCompile(`<tr data-code="502">.*</tr>`).FindString(page); !strings.Contains(row, `<td class="n">2</td>`) {
		t.Errorf("502 row = %q, want 2 since start", row)
	}
	if row := regexp.MustCompile(`<tr data-upstream="api" data-kind="refused">.*</tr>`).FindString(page); !strings.Contains(row, `<td class="n">2</td>`) {
		t.Errorf("upstream row = %q, want api refused 2 since start", row)
	}
	e.send(t, 1, "198.51.100.4", "/x", "") // within per-ip's limit: forwarded, and refused by the upstream
	clk.Lock()
	clk.t = clk.t.Add(10 * time.Second)
	clk.Unlock()
	page = view()
	if !strings.Contains(page, `<p class="notice">Upstream failures in the last 10s: api (refused, 3).`) {
		t.Error("no notice of the upstream's failures at the top of the page")
	}
	if row := regexp.MustCompile(`<tr data-upstream="api" data-kind="refused">.*</tr>`).FindString(page); !strings.Contains(row, ">0.30/s<") {
		t.Errorf("upstream row = %q, want a rate of 0.30/s (3 in 10 s)", row)
	}
	if strings.Contains(page, "198.51.100.") {
		t.Error("page shows a client address")
	}
}

func TestQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	cum := []float64{50, 90, 100}
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 0.001},
		{0.25, 0.0005},
		{0.9, 0.01},
		{0.95, 0.055},
		{0.99, 0.091},
	} {
		if got := quantile(tc.q, bounds, cum, 100); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// Samples above the highest bound: the highest bound, as PromQL says.
	if got := quantile(0.99, bounds, []float64{0, 0, 10}, 20); got != 0.1 {
		t.Errorf("quantile in +Inf = %v, want 0.1", got)
	}
	if got := quantile(0.5, bounds, cum, 0); !math.IsNaN(got) {
		t.Errorf("quantile of nothing = %v, want NaN", got)
	}
}

func TestFormatCount(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 46131: "46,131", 1234567: "1,234,567"} {
		if got := formatCount(n); got != want {
			t.Errorf("formatCount(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestDashboardContrast checks the style sheet's text colours against the
// backgrounds they sit on: at least 4.5:1 (WCAG 2.1 AA, normal text), and
// 3:1 for the chart's bars against white (non-text contrast).
func TestDashboardContrast(t *testing.T) {
	css, err := dashboardFiles.ReadFile("dashboard/dashboard.css")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z]+):(#[0-9a-f]{6})`).FindAllStringSubmatch(string(css), -1) {
		vars[m[1]] = m[2]
	}
	for _, p := range []struct {
		fg, bg string
		min    float64
	}{
		{"fg", "#ffffff", 4.5}, {"muted", "#ffffff", 4.5}, {"fg", "head", 4.5}, {"muted", "head", 4.5},
		{"link", "#ffffff", 4.5}, {"enforced", "#ffffff", 4.5}, {"shadow", "#ffffff", 4.5},
		{"#ffffff", "ok", 4.5}, {"#ffffff", "warn", 4.5}, {"fg", "#fff6e5", 4.5}, {"link", "head", 4.5},
		{"muted", "#fff6e5", 4.5},
	} {
		fg, bg := p.fg, p.bg
		if v, ok := vars[fg]; ok {
			fg = v
		}
		if v, ok := vars[bg]; ok {
			bg = v
		}
		if r := contrast(fg, bg); r < p.min {
			t.Errorf("%s (%s) on %s (%s): contrast %.2f, want at least %v", p.fg, fg, p.bg, bg, r, p.min)
		}
	}
	// The colours the SVG uses must be the style sheet's.
	for _, c := range []string{"#a4161a", "#0b4f9c", "#4d4d4d", "#1b1b1b"} {
		if !strings.Contains(string(css), c) {
			t.Errorf("chart colour %s is not in the style sheet", c)
		}
	}
}

func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func luminance(hex string) float64 {
	v, _ := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	ch := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(v>>16&0xff) + 0.7152*ch(v>>8&0xff) + 0.0722*ch(v&0xff)
}

// TestPagesSpeakPlainly: what a user reads (the dashboard, its sign-in
// page, the demo's pages, the reports) names no internal document or
// feature code, and promises nothing as "not built yet".
func TestPagesSpeakPlainly(t *testing.T) {
	jargon := regexp.MustCompile(`\bSPEC\b|\b[A-Z][0-9]{1,2}\b|not built yet|\bTODO\b|\bFIXME\b`)
	actions := regexp.MustCompile(`\{\{.*?\}\}`) // template code, not text
	var files []string
	for _, glob := range []string{"dashboard/*", "../demo/templates/*", "../logs/report/html.go"} {
		m, err := filepath.Glob(glob)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v (no files)", glob, err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasSuffix(f, ".go") && strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue // comments are for readers of the code
			}
			if m := jargon.FindString(actions.ReplaceAllString(line, "")); m != "" {
				t.Errorf("%s:%d: %q: %s", f, i+1, m, strings.TrimSpace(line))
			}
		}
	}
	// And the page as served, sessions and plans not configured.
	e := newDashEnv(t, "", nil)
	page := get(e.h, "/admin/", "", "127.0.0.1:5000").Body.String()
	if m := jargon.FindString(page); m != "" {
		t.Errorf("the dashboard says %q", m)
	}
}

// TestDashboardRejectedReload: while the last reload was rejected, the
// page says so at the top and lists its problems under the reloads, as
// GET /admin/config does: the file on disk is not the configuration in
// force, and a restart would refuse it. A reload that succeeds clears it.
func TestDashboardRejectedReload(t *testing.T) {
	e := newDashEnv(t, "", nil)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	problems := "dash.yaml:9: rules[2].limits[0]: limit \"3/1x\": window \"1x\" is not a positive duration (such as 1s, 5m, 1h, 1d)\n" +
		"dash.yaml:14: log.colour: unknown key \"colour\" (allowed: level, decisions, access)"
	e.srv.Rejected(at, "SIGHUP", problems)
	page := get(e.h, "/admin/", "", "127.0.0.1:1").Body.String()
	notice := `<p class="notice">The last reload (SIGHUP, at 2026-12-01T10:00:00Z) was rejected: the previous configuration keeps running, and a restart would refuse the file as it is now. Its problems are under Configuration reloads; floodgate validate lists them too.</p>`
	if !strings.Contains(page, notice) {
		t.Errorf("no notice of the rejected reload at the top of the page; want %s", notice)
	}
	list := regexp.MustCompile(`(?s)<ul id="reload-problems">(.*?)</ul>`).FindStringSubmatch(page)
	if list == nil {
		t.Fatal("no list of the rejected reload's problems")
	}
	for _, want := range []string{
		`<li><code>dash.yaml:9: rules[2].limits[0]: limit &#34;3/1x&#34;: window &#34;1x&#34; is not a positive duration (such as 1s, 5m, 1h, 1d)</code></li>`,
		`<li><code>dash.yaml:14: log.colour: unknown key &#34;colour&#34; (allowed: level, decisions, access)</code></li>`,
	} {
		if !strings.Contains(list[1], want) {
			t.Errorf("problems list = %s, want it to hold %s", list[1], want)
		}
	}

	yaml := strings.Replace(strings.Replace(dashYAML, "%s", "", 1), "%s", e.up.URL, 1)
	f, err := config.Parse("dash.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if _, problems := e.srv.Reload(f, []byte(yaml)); len(problems) > 0 {
		t.Fatal(problems)
	}
	page = get(e.h, "/admin/", "", "127.0.0.1:1").Body.String()
	if strings.Contains(page, "was rejected") || strings.Contains(page, `id="reload-problems"`) {
		t.Error("a reload that succeeded still shows the rejection")
	}
}
