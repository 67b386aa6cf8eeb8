package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
