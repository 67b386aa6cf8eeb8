package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBaselineCommand(t *testing.T) {
	// Flags after the file are read too.
	v := decode(t, nil, "baseline", excerptLog, "--json", "--windows", "1m,1h", "--top", "3", "--show-clients")
	if v["lines"] != 290.0 || v["parsed"] != 289.0 || v["unparsed"] != 1.0 || v["clients"] != 49.0 {
		t.Errorf("counts = %v %v %v %v", v["lines"], v["parsed"], v["unparsed"], v["clients"])
	}
	ws := v["windows"].([]any)
	if len(ws) != 2 || ws[0].(map[string]any)["window"] != "1m" || ws[1].(map[string]any)["window"] != "1h" {
		t.Errorf("windows = %v", ws)
	}
	top := v["top_clients"].([]any)
	if len(top) != 3 || top[0].(map[string]any)["client"] != "75.97.9.59" {
		t.Errorf("top_clients = %v", top)
	}

	// Hashed clients, stable with FLOODGATE_LOG_HASH_KEY.
	key := map[string]string{hashKeyVar: "0123456789abcdef"}
	a := decode(t, key, "baseline", "--json", excerptLog)["top_clients"].([]any)[0].(map[string]any)["client"]
	b := decode(t, key, "baseline", "--json", excerptLog)["top_clients"].([]any)[0].(map[string]any)["client"]
	if a != b || a == "75.97.9.59" {
		t.Errorf("hashed top client = %v then %v, want the same hash twice", a, b)
	}

	// The table, every format, standard input is tested in package logs.
	code, stdout, stderr := run(t, nil, "baseline", excerptLog, albLog, wafLog, floodgateLog)
	if code != 0 || !strings.Contains(stdout, "Suggested thresholds") || !strings.Contains(stderr, "line 270") {
		t.Errorf("baseline table: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "28 decision-log records skipped") {
		t.Errorf("stderr does not say decision records were skipped:\n%s", stderr)
	}
}

func TestBaselineHTMLFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "baseline.html")
	code, _, stderr := run(t, nil, "baseline", "--html", out, excerptLog)
	if code != 0 {
		t.Fatalf("exit code %d\n%s", code, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<svg ") || !strings.Contains(string(page), `lang="en"`) {
		t.Errorf("%s is not a report with charts", out)
	}
}
