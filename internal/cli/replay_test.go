package cli

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/session"
	"github.com/floodgate/floodgate/internal/telemetry"
)

func TestReplayCommand(t *testing.T) {
	v := decode(t, nil, "replay", "--limit", "100/5m", "--limit", "20/1m", "--algorithm", "fixed_window", "--json", elasticLog)
	if v["lines"] != 10000.0 || v["parsed"] != 9999.0 || v["unparsed"] != 1.0 || v["mode"] != "log-only" {
		t.Errorf("summary = %v", v)
	}
	rules := v["rules"].([]any)
	r0 := rules[0].(map[string]any)
	if len(rules) != 2 || r0["name"] != "limit-100-per-5m" || r0["limit"] != "100/5m" || r0["algorithm"] != "fixed_window" {
		t.Errorf("rules = %v", rules)
	}
	// 108 requests in a minute (and in its 5 minutes): 8 over 100/5m.
	if r0["would_block_requests"] != 8.0 || r0["would_block_clients"] != 1.0 || r0["would_block_browser_clients"] != 1.0 {
		t.Errorf("limit-100-per-5m = %v", r0)
	}

	// A configuration, its environment, and a --limit beside its rules.
	v = decode(t, nil, "replay", "--config", "../../examples/mavedb.yaml", "--env", "production", "--limit", "50/1m", "--mode", "enforce", "--json", excerptLog)
	names := []string{}
	for _, r := range v["rules"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	if v["mode"] != "enforce" || len(names) < 4 || names[0] != "limit-50-per-1m" || names[1] != "shadow-requests" {
		t.Errorf("mode %v, rules %v", v["mode"], names)
	}

	out := filepath.Join(t.TempDir(), "replay.html")
	if code, _, stderr := run(t, nil, "replay", "--limit", "20/1m", "--html", out, excerptLog); code != 0 {
		t.Fatalf("--html: exit code %d\n%s", code, stderr)
	}
	if page, err := os.ReadFile(out); err != nil || strings.Count(string(page), "<svg ") != 2 {
		t.Errorf("%s: %v, want a report with 2 charts", out, err)
	}
}

func TestReplayInvalidConfig(t *testing.T) {
	code, _, stderr := run(t, nil, "replay", "--config", "testdata/invalid.yaml", excerptLog)
	if code != 1 || !strings.Contains(stderr, "invalid.yaml:") {
		t.Errorf("exit code %d, stderr:\n%s", code, stderr)
	}
}

// TestReplayUnmeasuredCost: a rule that counts upstream seconds cannot be
// replayed from a log that records no durations (a common log); replay
// says so rather than reporting it charged 0, and still charges from a
// log that has them (ALB's target_processing_time).
func TestReplayUnmeasuredCost(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "cost.yaml")
	yaml := "upstreams: {api: {url: \"http://127.0.0.1:9\"}}\n" +
		"rules:\n  - {name: upstream-time, cost: upstream_seconds, limits: [60/1m]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, nil, "replay", "--config", cfg, excerptLog)
	if code != 0 || !strings.Contains(out, "upstream-time: its cost, upstream_seconds, cannot be replayed from this log") ||
		strings.Contains(out, "charged 0") {
		t.Errorf("common log: exit code %d, stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	v := decode(t, nil, "replay", "--config", cfg, "--json", excerptLog)
	if r := v["rules"].([]any)[0].(map[string]any); r["unmeasured"] != true {
		t.Errorf("common log, --json: %v, want unmeasured: true", r)
	}
	code, out, _ = run(t, nil, "replay", "--config", cfg, albLog)
	if code != 0 || !strings.Contains(out, "upstream-time: charged ") || strings.Contains(out, "cannot be replayed") {
		t.Errorf("ALB log: exit code %d, stdout:\n%s", code, out)
	}
}

// TestReplayFileOrder: the files of one log, given in any order (logrotate's
// access.log access.log.1), replay as the whole log does, and a line dated
// years ahead is left out and said so instead of moving the clock.
func TestReplayFileOrder(t *testing.T) {
	lines := strings.SplitAfter(gunzip(t, elasticLog), "\n")
	dir := t.TempDir()
	write := func(name string, lines []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	older, newer := write("access.log.1", lines[:5000]), write("access.log", lines[5000:])
	bad := `192.0.2.1 - - [17/May/2035:10:05:03 +0000] "GET /x HTTP/1.1" 200 12 "-" "Mozilla/5.0 (X11; Linux) Firefox/120"` + "\n"
	withBad := write("bad.log", append(append(append([]string{}, lines[:100]...), bad), lines[100:]...))

	rules := func(v map[string]any) any { return v["rules"] }
	want := decode(t, nil, "replay", "--limit", "40/1m", "--json", elasticLog)
	for _, files := range [][]string{{older, newer}, {newer, older}, {withBad}} {
		got := decode(t, nil, append([]string{"replay", "--limit", "40/1m", "--json"}, files...)...)
		if diff := cmp.Diff(rules(got), rules(want)); diff != "" {
			t.Errorf("replay %s: rules (-got +want, the whole log):\n%s", strings.Join(files, " "), diff)
		}
		order, _ := got["order"].(map[string]any)
		wantLeft := 0.0
		if files[0] == withBad {
			wantLeft = 1
		}
		if order["late"] != 0.0 || order["left_out"] != wantLeft {
			t.Errorf("replay %s: order = %v, want none late, %v left out", strings.Join(files, " "), order, wantLeft)
		}
	}
	code, out, _ := run(t, nil, "replay", "--limit", "40/1m", withBad)
	if code != 0 || !strings.Contains(out, "1 record left out: dated up to 7,304 days after the record that followed it") {
		t.Errorf("exit code %d, stdout:\n%s", code, out)
	}
}

// TestReplayOrderOnStderr: requests replayed out of time order, and
// records left out, are said on standard error too, with how far out of
// order the worst was and why they were late, as the JSON report says
// them only in its order field: here a load balancer's log in which one request took seven
// minutes, logged as it ended and dated as it arrived, further back than
// the log is put back in order.
func TestReplayOrderOnStderr(t *testing.T) {
	const stamp = "2006-01-02T15:04:05.000000Z"
	albLine := func(client string, created time.Time, took time.Duration) string {
		return fmt.Sprintf(`https %s app/lb/1 %s:2817 10.0.0.1:80 0.001 %.3f 0.000 200 200 34 366 "GET https://www.example.com:443/scores HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:1:targetgroup/t/1 "Root=1-2" "www.example.com" "-" 0 %s "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`+"\n",
			created.Add(took).Format(stamp), client, took.Seconds(), created.Format(stamp))
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	slowAt, took := 10*time.Second, 7*time.Minute
	var b strings.Builder
	slow := false
	for i := range 30 * 8 * 60 { // 30 requests a second for 8 minutes, each 10 ms
		c := t0.Add(time.Duration(i) * time.Second / 30)
		if !slow && c.After(t0.Add(slowAt+took)) {
			b.WriteString(albLine("198.51.100.7", t0.Add(slowAt), took))
			slow = true
		}
		b.WriteString(albLine(fmt.Sprintf("192.0.2.%d", i%200), c, 10*time.Millisecond))
	}
	log := filepath.Join(t.TempDir(), "alb.log")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, nil, "replay", "--limit", "40/1m", "--json", log)
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 {
		t.Fatalf("exit %d, %v; stderr:\n%s", code, err, stderr)
	}
	order, _ := v["order"].(map[string]any)
	late, _ := order["late_max_seconds"].(float64)
	if order["late"] != 1.0 || late <= 0 || late > (took-5*time.Minute).Seconds() {
		t.Errorf("order = %v, want 1 late by at most %v", order, took-5*time.Minute)
	}
	if diff := cmp.Diff(order["late_reasons"], any(map[string]any{"span": 1.0, "memory": 0.0, "open_files": 0.0})); diff != "" {
		t.Errorf("order.late_reasons (-got +want), the line came more than five minutes after later ones:\n%s", diff)
	}
	if want := "floodgate replay: 1 request out of time order, up to "; !strings.Contains(stderr, want) {
		t.Errorf("stderr:\n%s\nwant a line starting %q", stderr, want)
	}
	if want := " older than one replayed before (1 logged more than 5m0s after later ones in its file): "; !strings.Contains(stderr, want) {
		t.Errorf("stderr:\n%s\nwant why it was late: %q", stderr, want)
	}
}

// gunzip returns the content of a gzip file.
func gunzip(t *testing.T, name string) string {
	t.Helper()
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReplayOfServeInternalCalls: replaying the access log a gateway
// wrote gives what the gateway did. Calls on the internal listener are
// forwarded uncounted: replayed, they count for no rule either, though
// they come from the same address as a public request the rule counts.
func TestReplayOfServeInternalCalls(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	sock := filepath.Join(t.TempDir(), "internal.sock")
	yaml := opsYAML(up.URL, "2/1h") + "internal: {listen: \"unix:" + sock + "\"}\nlog: {access: stderr}\n"
	g := startServe(t, yaml)
	internal := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for range 5 {
		resp, err := internal.Get("http://internal/a")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("internal call: status %d, want 200", resp.StatusCode)
		}
	}
	if code := g.status("/a"); code != 200 {
		t.Fatalf("public request: status %d, want 200", code)
	}
	var access strings.Builder
	n := 0
	for line := range strings.Lines(g.stderr.String()) {
		if strings.Contains(line, `"msg":"access"`) {
			access.WriteString(line)
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d access records, want 6:\n%s", n, g.stderr.String())
	}
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(access.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PUB": "127.0.0.1:1", "ADM": "127.0.0.1:2"}
	v := decode(t, vars, "replay", "--config", g.conf, "--mode", "enforce", "--json", log)
	r := v["rules"].([]any)[0].(map[string]any)
	if v["requests"] != 6.0 || r["matched"] != 1.0 || r["would_block_requests"] != 0.0 {
		t.Errorf("replay: %v requests; per-ip matched %v, would block %v; want 6, 1, 0 (the gateway refused none)", v["requests"], r["matched"], r["would_block_requests"])
	}
}

// TestReplayTwiceSameReport: two replays of the same log and
// configuration print the same bytes, in every output, also when the
// store's key cap is too small and it evicts counters.
func TestReplayTwiceSameReport(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "small.yaml")
	yaml := "upstreams: {api: {url: \"http://127.0.0.1:9\"}}\nstore: {max_keys: 1024}\n" +
		"rules:\n  - {name: per-ip, limits: [5/1m, 30/1h, 50/1d]}\n  - {name: per-ip-day, action: count, limits: [80/1d]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "replay.html")
	for _, format := range [][]string{nil, {"--json"}, {"--html", html}} {
		var first string
		for i := range 3 {
			code, out, stderr := run(t, nil, append([]string{"replay", "--config", cfg, elasticLog}, format...)...)
			if code != 0 || !strings.Contains(out, "evict") && format == nil {
				t.Fatalf("exit code %d, want 0 and evictions reported; stdout:\n%s\nstderr:\n%s", code, out, stderr)
			}
			if len(format) == 2 {
				page, err := os.ReadFile(html)
				if err != nil {
					t.Fatal(err)
				}
				out = string(page)
			}
			if i == 0 {
				first = out
			} else if out != first {
				t.Errorf("replay %v, run %d (-got +first):\n%s", format, i+1, cmp.Diff(out, first))
			}
		}
	}
}

// sessionsYAML is a gateway with visitor sessions and one API client,
// and rules keyed by each; its secrets come from the environment.
func sessionsYAML(upstream string) string {
	return `
listen: ${PUB}
admin: {listen: "${ADM}"}
server: {read_header_timeout: 300ms}
upstreams: {api: {url: "` + upstream + `"}}
sessions: {secret: "${SESSION_SECRET}", cookie: sid, issue_when: "request.path == '/page'"}
api_clients:
  plans: {standard: [2/1h]}
  clients:
    - {id: research-lab, plan: standard, token_sha256: ` + fmt.Sprintf("%x", sha256.Sum256([]byte("lab-token"))) + `}
rules:
  - {name: per-session, key: [session], limits: [2/1h]}
  - {name: per-client, key: [api_client], limits_from: plan}
  - {name: per-ip, limits: [100/1h]}
  - {name: anonymous, when: "!session.valid", limits: [50/1h]}
log: {access: stderr}
`
}

// TestReplayOfServeSessions: the gateway's access log records a keyed
// hash of each request's session and the id of its API client, so rules
// keyed by them replay as the gateway ran them, with no secret: neither
// the session signing key nor FLOODGATE_LOG_HASH_KEY.
func TestReplayOfServeSessions(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServeEnv(t, map[string]string{"SESSION_SECRET": strings.Repeat("s", 40), hashKeyVar: "0123456789abcdef"}, sessionsYAML(up.URL))
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	get := func(c *http.Client, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+g.pub+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// A page load issues the session; three calls with it, the third over
	// 2/1h; three calls of the API client, the third over its plan.
	var codes []int
	codes = append(codes, get(browser, "/page", ""))
	for range 3 {
		codes = append(codes, get(browser, "/api", ""))
	}
	for range 3 {
		codes = append(codes, get(http.DefaultClient, "/api", "lab-token"))
	}
	if want := []int{200, 200, 200, 429, 200, 200, 429}; !slices.Equal(codes, want) {
		t.Fatalf("statuses %v, want %v", codes, want)
	}
	// The session's id, as the gateway reads it from the cookie: the
	// access log holds its keyed hash, never the id.
	sm, err := session.New(session.Options{Name: "sid", Secrets: [][]byte{[]byte(strings.Repeat("s", 40))}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := http.NewRequest("GET", "http://"+g.pub+"/api", nil)
	for _, c := range jar.Cookies(page.URL) {
		page.AddCookie(c)
	}
	id, _, ok := sm.Verify(page)
	if !ok {
		t.Fatal("the browser holds no valid session cookie")
	}
	hashed := `"session":"` + telemetry.NewKeyHasher("0123456789abcdef").Hash([]byte(id)) + `"`
	var access strings.Builder
	var withSession, withClient int
	for line := range strings.Lines(g.stderr.String()) {
		if strings.Contains(line, `"msg":"access"`) {
			if strings.Contains(line, strings.Repeat("s", 40)) || strings.Contains(line, "lab-token") || strings.Contains(line, id) {
				t.Fatalf("a secret or the session id in the access log: %s", line)
			}
			if strings.Contains(line, `"session":`) {
				if !strings.Contains(line, hashed) {
					t.Errorf("access record %s: want the session as %s", line, hashed)
				}
				withSession++
			}
			if strings.Contains(line, `"api_client":"research-lab"`) {
				withClient++
			}
			access.WriteString(line)
		}
	}
	if withSession != 3 || withClient != 3 {
		t.Errorf("%d access records with a session and %d with the API client, want 3 and 3", withSession, withClient)
	}
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(access.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// No SESSION_SECRET, no FLOODGATE_LOG_HASH_KEY.
	vars := map[string]string{"PUB": "127.0.0.1:1", "ADM": "127.0.0.1:2"}
	code, out, stderr := run(t, vars, "replay", "--config", g.conf, "--mode", "enforce", "--json", log)
	if code != 0 {
		t.Fatalf("replay: exit code %d\n%s", code, stderr)
	}
	var res struct {
		Requests int
		Rules    []struct {
			Name        string
			Matched     int
			WouldBlock  int    `json:"would_block_requests"`
			NotReplayed string `json:"not_replayed"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	type rule struct {
		name                string
		matched, wouldBlock int
	}
	var got []rule
	for _, r := range res.Rules {
		if r.NotReplayed != "" {
			t.Errorf("%s: not replayed: %s", r.Name, r.NotReplayed)
		}
		got = append(got, rule{r.Name, r.Matched, r.WouldBlock})
	}
	// As the gateway: per-session counted the three calls with the
	// session (the page load had none yet) and refused the third; the
	// plan's rule the client's three, refusing the third; per-ip saw the
	// five requests neither refused; anonymous the three of those
	// without a session (the page load, the client's two admitted calls).
	want := []rule{{"per-session", 3, 1}, {"per-client.standard", 3, 1}, {"per-ip", 5, 0}, {"anonymous", 3, 0}}
	if res.Requests != 7 || !cmp.Equal(got, want, cmp.AllowUnexported(rule{})) {
		t.Errorf("replay: %d requests, rules %+v; want 7, %+v", res.Requests, got, want)
	}
}

// TestReplayRouteCredentialsClient: requests to an upstream whose
// credentials name an API client (auth.api_client) count as that client
// in the gateway, so a plan rule replays from a log that records no API
// client (a combined log), with the credential itself unset.
func TestReplayRouteCredentialsClient(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "floodgate.yaml")
	conf := strings.Replace(sessionsYAML("http://127.0.0.1:9"), `upstreams: {api: {url: "http://127.0.0.1:9"}}`,
		`upstreams: {api: {url: "http://127.0.0.1:9", auth: {type: header, header_value: "Bearer ${API_TOKEN}", api_client: research-lab}}}`, 1)
	if conf == sessionsYAML("http://127.0.0.1:9") {
		t.Fatal("the upstream line was not found")
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PUB": "127.0.0.1:1", "ADM": "127.0.0.1:2"}
	v := decode(t, vars, "replay", "--config", cfg, "--json", excerptLog)
	requests := v["requests"].(float64)
	found := false
	for _, r := range v["rules"].([]any) {
		r := r.(map[string]any)
		if r["name"] != "per-client.standard" {
			continue
		}
		found = true
		if nr, ok := r["not_replayed"]; ok || r["matched"].(float64) != requests || r["would_block_requests"].(float64) < requests/2 {
			t.Errorf("per-client.standard: matched %v, would-block %v, not replayed %v; want all %v requests as research-lab, most over its 2/1h",
				r["matched"], r["would_block_requests"], nr, requests)
		}
	}
	if !found {
		t.Errorf("no per-client.standard rule in %v", v["rules"])
	}
}

// TestReplayUnreplayableRules: a rule keyed by session or API client
// cannot be replayed from a log that records neither (a combined log):
// the report and standard error say so for each, with what would make it
// replayable, rather than show it as having refused nothing. The replay
// succeeds while some rule could be replayed, and fails when none could.
func TestReplayUnreplayableRules(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "floodgate.yaml")
	vars := map[string]string{"PUB": "127.0.0.1:1", "ADM": "127.0.0.1:2"}
	if err := os.WriteFile(cfg, []byte(sessionsYAML("http://127.0.0.1:9")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, vars, "replay", "--config", cfg, excerptLog)
	if code != 0 {
		t.Fatalf("exit code %d, want 0: per-ip is replayed\n%s", code, stderr)
	}
	for _, rule := range []string{"per-session", "per-client.standard"} {
		for name, text := range map[string]string{"stdout": out, "stderr": stderr} {
			if !strings.Contains(text, rule+": not replayed: ") {
				t.Errorf("%s does not say %s was not replayed:\n%s", name, rule, text)
			}
		}
	}
	if !strings.Contains(out, "record no session") || !strings.Contains(out, "record no API client") ||
		!strings.Contains(out, "floodgate's access log") {
		t.Errorf("stdout does not say why, nor what would do:\n%s", out)
	}
	// A rule replayed on an assumption (its condition reads the session,
	// which the log does not record) says so.
	for name, text := range map[string]string{"stdout": out, "stderr": stderr} {
		if !strings.Contains(text, "anonymous: its condition reads session.*") {
			t.Errorf("%s does not say anonymous was replayed as if no request had a session:\n%s", name, text)
		}
	}
	v := decode(t, vars, "replay", "--config", cfg, "--json", excerptLog)
	for _, r := range v["rules"].([]any) {
		r := r.(map[string]any)
		_, not := r["not_replayed"]
		if _, caveat := r["caveat"]; caveat != (r["name"] == "anonymous") {
			t.Errorf("%s: caveat %v", r["name"], r["caveat"])
		}
		if want := r["name"] != "per-ip" && r["name"] != "anonymous"; not != want {
			t.Errorf("%s: not_replayed %v, want it %v", r["name"], r["not_replayed"], want)
		}
	}

	// Only rules that cannot be replayed: nothing was, and replay fails.
	only := strings.Replace(sessionsYAML("http://127.0.0.1:9"), "  - {name: per-ip, limits: [100/1h]}\n", "", 1)
	only = strings.Replace(only, "  - {name: anonymous, when: \"!session.valid\", limits: [50/1h]}\n", "", 1)
	if err := os.WriteFile(cfg, []byte(only), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = run(t, vars, "replay", "--config", cfg, excerptLog)
	if code != 1 || !strings.Contains(stderr, "no rule could be replayed") || !strings.Contains(out, "per-session: not replayed: ") {
		t.Errorf("exit code %d, want 1 with the reasons; stdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestReplayWithoutStoreVariables: replay counts in its own memory and
// connects to no store, so a variable that the file uses only in
// store.url (production's Redis password, or its whole URL) or
// store.timeout may be unset
// for a replay, as the credentials may; serve and validate, which need
// the store, still refuse the file and name the variable.
func TestReplayWithoutStoreVariables(t *testing.T) {
	for _, url := range []string{"redis://:${SOME_UNSET_VAR}@127.0.0.1:6379/0", "${SOME_UNSET_VAR}"} {
		cfg := filepath.Join(t.TempDir(), "floodgate.yaml")
		conf := `
listen: 127.0.0.1:0
admin: {listen: "off"}
store: {url: "` + url + `", timeout: "${STORE_TIMEOUT}", max_keys: 4096}
upstreams: {api: {url: "http://127.0.0.1:9", auth: {type: header, header_value: "Bearer ${API_TOKEN}"}}}
rules:
  - {name: per-ip, limits: [20/1m]}
`
		if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := run(t, nil, "replay", "--config", cfg, "--json", excerptLog)
		if code != 0 {
			t.Fatalf("store.url %s: replay exit code %d, want 0\n%s", url, code, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("store.url %s: %v\n%s", url, err, out)
		}
		if rules := v["rules"].([]any); len(rules) != 1 || rules[0].(map[string]any)["name"] != "per-ip" || v["requests"].(float64) == 0 {
			t.Errorf("store.url %s: %v requests, rules %v; want the log's requests through per-ip", url, v["requests"], rules)
		}
		for _, want := range []string{"SOME_UNSET_VAR, STORE_TIMEOUT not set: replay counts in memory and connects to no store", "API_TOKEN not set: replay reads no credential"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("store.url %s: stderr does not say %q:\n%s", url, want, stderr)
			}
		}
		for _, cmd := range [][]string{{"validate", "--config", cfg}, {"serve", "--config", cfg}} {
			code, _, stderr := run(t, map[string]string{"API_TOKEN": "t"}, cmd...)
			if code == 0 || !strings.Contains(stderr, "SOME_UNSET_VAR is not set") {
				t.Errorf("store.url %s: %s: exit code %d, want a failure naming SOME_UNSET_VAR:\n%s", url, cmd[0], code, stderr)
			}
		}
	}
}
