package cli

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
