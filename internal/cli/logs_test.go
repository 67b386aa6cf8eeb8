package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	excerptLog   = "../logs/testdata/elastic_excerpt.log"
	elasticLog   = "../logs/testdata/elastic_apache_logs.log.gz"
	floodgateLog = "../logs/testdata/floodgate.jsonl"
	albLog       = "../logs/testdata/alb.log"
	wafLog       = "../logs/testdata/waf.jsonl"
)

// decode runs a command that prints JSON and decodes it.
func decode(t *testing.T, vars map[string]string, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := run(t, vars, args...)
	if code != 0 {
		t.Fatalf("floodgate %s: exit code %d\n%s", strings.Join(args, " "), code, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("floodgate %s: %v\n%s", strings.Join(args, " "), err, stdout)
	}
	return v
}

func TestLogsCommand(t *testing.T) {
	v := decode(t, nil, "logs", "limited-clients", "--json", floodgateLog)
	if v["query"] != "limited-clients" || len(v["clients"].([]any)) != 2 {
		t.Errorf("limited-clients = %v", v)
	}
	v = decode(t, nil, "logs", "browsers-caught", "--json", floodgateLog)
	if v["browser_requests"] != 8.0 || len(v["rules"].([]any)) != 2 {
		t.Errorf("browsers-caught = %v", v)
	}
	v = decode(t, nil, "logs", "peak-rate", "--json", "--windows", "1m", floodgateLog)
	if v["clients"] != 3.0 || len(v["windows"].([]any)) != 1 {
		t.Errorf("peak-rate = %v", v)
	}
	for _, q := range []string{"limited-clients", "browsers-caught", "peak-rate"} {
		if code, stdout, stderr := run(t, nil, "logs", q, floodgateLog); code != 0 || !strings.Contains(stdout, "floodgate logs "+q) {
			t.Errorf("logs %s: code %d\n%s\n%s", q, code, stdout, stderr)
		}
	}
}

// TestLogsClientsHashed: the saved queries show a client address as a
// keyed hash, in the table and the JSON, unless --show-clients; a
// combined log's 429 and a WAF rate-based block alike.
func TestLogsClientsHashed(t *testing.T) {
	dir := t.TempDir()
	for name, line := range map[string]string{
		"combined.log": `198.51.100.7 - - [10/Oct/2026:13:55:37 +0000] "GET /a HTTP/1.1" 429 12 "-" "Mozilla/5.0 (X11; Linux) Firefox/120"`,
		"waf.jsonl":    `{"timestamp":1791726937000,"action":"BLOCK","terminatingRuleId":"per-ip","terminatingRuleType":"RATE_BASED","httpRequest":{"clientIp":"198.51.100.7","uri":"/a","httpMethod":"GET","headers":[]}}`,
	} {
		log := filepath.Join(dir, name)
		if err := os.WriteFile(log, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"limited-clients", "peak-rate"} {
			for _, args := range [][]string{{}, {"--json"}, {"--show-clients"}, {"--show-clients", "--json"}} {
				args = append([]string{"logs", q, log}, args...)
				code, out, stderr := run(t, nil, args...)
				shown := len(args) > 3 && args[3] == "--show-clients"
				if has := strings.Contains(out, "198.51.100.7"); code != 0 || has != shown {
					t.Errorf("floodgate %s: exit code %d, address shown %v, want %v:\n%s%s",
						strings.Join(args, " "), code, has, shown, out, stderr)
				}
			}
		}
	}
}

// TestLogsEscapeLogContent: what a client writes into the log (a request
// path) and what a crafted log holds (client, rule names) reach the
// terminal escaped, never as control sequences.
func TestLogsEscapeLogContent(t *testing.T) {
	const ua = `Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0`
	log := filepath.Join(t.TempDir(), "access.log")
	lines := []string{
		`{"time":"2026-12-02T14:19:17Z","msg":"access","method":"GET","path":"/a\u001b]0;owned\u0007\u001b[2J\r\nX","status":429,"route":"default","duration_ms":1,"ua":"` + ua + `","ua_class":"browser","client":"3d460942d0aee600","bytes":2,"blocked_by":"per-ip"}`,
		`{"time":"2026-12-02T14:19:18Z","msg":"access","method":"GET","path":"/b","status":429,"route":"default","duration_ms":1,"ua":"` + ua + `","ua_class":"browser","client":"\u001b[2J\u001b]0;x\u0007","bytes":2,"blocked_by":"rule\u001b[31m\n","would_block":["\u009b1A"]}`,
	}
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"limited-clients", "browsers-caught", "peak-rate"} {
		code, out, stderr := run(t, nil, "logs", q, log)
		if code != 0 || strings.ContainsAny(out, "\x1b\x07\r\u009b") {
			t.Errorf("logs %s: exit code %d, stdout:\n%q\n%s", q, code, out, stderr)
		}
	}
	_, out, _ := run(t, nil, "logs", "browsers-caught", log)
	if !strings.Contains(out, `/a\x1b]0;owned\a\x1b[2J\r\nX (1)`) {
		t.Errorf("browsers-caught does not show the path escaped:\n%s", out)
	}
}

// TestBrowsersCaughtFromDecisions: from a decision log alone the number
// of all browser requests is not known, and is not printed as 0.
func TestBrowsersCaughtFromDecisions(t *testing.T) {
	data, err := os.ReadFile(floodgateLog)
	if err != nil {
		t.Fatal(err)
	}
	var decisions []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, `"msg":"decision"`) {
			decisions = append(decisions, l)
		}
	}
	log := filepath.Join(t.TempDir(), "decision.log")
	if err := os.WriteFile(log, []byte(strings.Join(decisions, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, nil, "logs", "browsers-caught", log)
	if code != 0 || strings.Contains(out, "(of ") || !strings.Contains(out, "how many requests came from browsers in all (browser_requests) is not known") {
		t.Errorf("exit code %d, stdout:\n%s%s", code, out, stderr)
	}
	v := decode(t, nil, "logs", "browsers-caught", "--json", log)
	if n, ok := v["browser_requests"]; !ok || n != nil || len(v["rules"].([]any)) != 2 {
		t.Errorf("browser_requests = %v, rules %v; want null, 2 rules", n, v["rules"])
	}
}

// TestHTMLBeforeReading: an --html file that cannot be written is
// reported before any log is read; a run that fails after leaves an
// existing report as it was and removes one it created.
func TestHTMLBeforeReading(t *testing.T) {
	dir := t.TempDir()
	missingLog := filepath.Join(dir, "missing.log")
	unparsable := filepath.Join(dir, "unparsable.log")
	if err := os.WriteFile(unparsable, []byte("nothing to see\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"baseline"}, {"replay", "--limit", "40/1m"}} {
		name := cmd[0]
		for _, bad := range []string{filepath.Join(dir, "no-such-dir", "x.html"), dir} {
			code, _, stderr := run(t, nil, append(cmd, "--html", bad, missingLog)...)
			if code != 1 || !strings.Contains(stderr, "--html: open "+bad) || strings.Contains(stderr, "missing.log") {
				t.Errorf("%s --html %s: exit code %d, want 1 and the --html path named before the log:\n%s", name, bad, code, stderr)
			}
		}
		created := filepath.Join(dir, name+"-new.html")
		if code, _, _ := run(t, nil, append(cmd, "--html", created, unparsable)...); code != 1 {
			t.Errorf("%s on an unparsable log: exit code %d, want 1", name, code)
		}
		if _, err := os.Stat(created); !os.IsNotExist(err) {
			t.Errorf("%s failed and left %s: %v", name, created, err)
		}
		old := filepath.Join(dir, name+"-old.html")
		if err := os.WriteFile(old, []byte("the last report"), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := run(t, nil, append(cmd, "--html", old, unparsable)...); code != 1 {
			t.Errorf("%s on an unparsable log: exit code %d, want 1", name, code)
		}
		if data, err := os.ReadFile(old); err != nil || string(data) != "the last report" {
			t.Errorf("%s failed and changed %s: %q, %v", name, old, data, err)
		}
		if code, _, stderr := run(t, nil, append(cmd, "--html", old, excerptLog)...); code != 0 {
			t.Errorf("%s --html over a report: exit code %d\n%s", name, code, stderr)
		}
		if data, err := os.ReadFile(old); err != nil || !strings.HasPrefix(string(data), "<!DOCTYPE html>") {
			t.Errorf("%s did not replace %s: %.40q, %v", name, old, data, err)
		}
	}
}

// TestLogsUpstream429: in floodgate's access log, a 429 without
// blocked_by is the upstream's answer, forwarded: no query counts it as
// floodgate's refusal.
func TestLogsUpstream429(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	line := `{"time":"2026-12-02T14:19:17.875Z","msg":"access","method":"GET","path":"/x","status":429,"route":"default","duration_ms":1.665,"ua":"Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0","ua_class":"browser","client":"3d460942d0aee600","bytes":2}`
	if err := os.WriteFile(log, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := decode(t, nil, "logs", "limited-clients", "--json", log); len(v["clients"].([]any)) != 0 {
		t.Errorf("limited-clients = %v, want no client", v["clients"])
	}
	if v := decode(t, nil, "logs", "browsers-caught", "--json", log); len(v["rules"].([]any)) != 0 || v["browser_requests"] != 1.0 {
		t.Errorf("browsers-caught = rules %v of %v browser requests, want none of 1", v["rules"], v["browser_requests"])
	}
}

// TestTop: --top means one thing in every command that lists clients:
// at most N of them, none for 0, and a negative N is a usage error.
func TestTop(t *testing.T) {
	for _, tc := range []struct {
		args []string
		list string // the JSON list of clients
		all  int    // how many clients there are to list
	}{
		{[]string{"baseline", excerptLog}, "top_clients", 49},
		{[]string{"logs", "peak-rate", floodgateLog}, "top_clients", 3},
		{[]string{"logs", "limited-clients", floodgateLog}, "clients", 2},
	} {
		name := strings.Join(tc.args[:len(tc.args)-1], " ")
		for _, n := range []int{0, 1, 2, 50} {
			v := decode(t, nil, append(tc.args, "--json", "--top", strconv.Itoa(n))...)
			if got, want := len(v[tc.list].([]any)), min(n, tc.all); got != want {
				t.Errorf("%s --top %d: %d clients listed, want %d", name, n, got, want)
			}
			if tc.list == "clients" && v["limited"] != float64(tc.all) {
				t.Errorf("%s --top %d: limited = %v, want %d", name, n, v["limited"], tc.all)
			}
		}
		for _, n := range []string{"-1", "-20"} {
			if code, _, stderr := run(t, nil, append(tc.args, "--top", n)...); code != 2 || !strings.Contains(stderr, "--top: want 0 or more") {
				t.Errorf("%s --top %s: exit code %d, want 2 (usage)\n%s", name, n, code, stderr)
			}
		}
	}
}

func TestLogToolsUsage(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.log")
	if err := os.WriteFile(empty, []byte("nothing to see\nhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"baseline without logs", []string{"baseline"}, 2},
		{"baseline bad windows", []string{"baseline", "--windows", "5x", excerptLog}, 2},
		{"baseline zero window", []string{"baseline", "--windows", "0s", excerptLog}, 2},
		{"baseline bad format", []string{"baseline", "--format", "nginx", excerptLog}, 2},
		{"baseline missing file", []string{"baseline", "testdata/does-not-exist.log"}, 1},
		{"baseline nothing parsed", []string{"baseline", empty}, 1},
		{"baseline stdin twice", []string{"baseline", "-", "-"}, 2},
		{"baseline forced wrong format", []string{"baseline", "--format", "alb", excerptLog}, 1},
		{"replay without rules", []string{"replay", excerptLog}, 2},
		{"replay without logs", []string{"replay", "--limit", "1/1m"}, 2},
		{"replay bad limit", []string{"replay", "--limit", "1/1x", excerptLog}, 2},
		{"replay limit twice", []string{"replay", "--limit", "1/1m", "--limit", "1/1m", excerptLog}, 2},
		{"replay bad algorithm", []string{"replay", "--limit", "1/1m", "--algorithm", "leaky", excerptLog}, 2},
		{"replay bad mode", []string{"replay", "--limit", "1/1m", "--mode", "strict", excerptLog}, 2},
		{"replay env without config", []string{"replay", "--limit", "1/1m", "--env", "production", excerptLog}, 2},
		{"replay mode config without config", []string{"replay", "--limit", "1/1m", "--mode", "config", excerptLog}, 2},
		{"replay missing config", []string{"replay", "--config", "testdata/does-not-exist.yaml", excerptLog}, 1},
		{"logs without query", []string{"logs"}, 2},
		{"logs unknown query", []string{"logs", "slow-clients", floodgateLog}, 2},
		{"logs without logs", []string{"logs", "peak-rate"}, 2},
		{"baseline help", []string{"baseline", "-h"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := run(t, nil, tc.args...); code != tc.want {
				t.Errorf("floodgate %s: exit code %d, want %d\n%s", strings.Join(tc.args, " "), code, tc.want, stderr)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	var buf strings.Builder
	p := &progress{w: &buf, on: true}
	p.update(10<<20, 20<<20) // small input: no bar
	if buf.Len() != 0 {
		t.Errorf("bar for a small input: %q", buf.String())
	}
	p.update(50<<20, 100<<20)
	if !strings.Contains(buf.String(), " 50% 50/100 MiB") {
		t.Errorf("bar = %q", buf.String())
	}
	p.done()
	if !strings.HasSuffix(buf.String(), "\r\033[K") {
		t.Errorf("bar not cleared: %q", buf.String())
	}
	// Not a terminal (a buffer, a pipe): never a bar.
	var quiet strings.Builder
	q := newProgress(&quiet)
	q.update(50<<20, 100<<20)
	q.done()
	if quiet.Len() != 0 {
		t.Errorf("bar on a non-terminal: %q", quiet.String())
	}
}

// An input in which no line gave a record names the files that were
// empty, for every command that reads logs.
func TestEmptyLogNamed(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "access.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"baseline", empty}, {"replay", "--limit", "10/1m", empty}, {"logs", "peak-rate", empty},
	} {
		code, _, stderr := run(t, nil, args...)
		if code != 1 || !strings.Contains(stderr, "access.log is empty") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and the empty file named", args, code, stderr)
		}
	}
}
