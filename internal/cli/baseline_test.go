package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/telemetry"
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

// TestClientHashesJoin: with one FLOODGATE_LOG_HASH_KEY, a client has
// one hash in the gateway's access log and in the reports of baseline and
// logs over another log of the same traffic, so an operator can join
// them. The gateway hashes the key it counts the client under (IPv6 by
// /64), and so do the reports.
func TestClientHashesJoin(t *testing.T) {
	const key = "0123456789abcdef0123"
	vars := map[string]string{hashKeyVar: key}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServeEnv(t, vars, opsYAML(up.URL, "100/1h")+"log: {access: stderr}\n")
	if code := g.status("/a"); code != 200 {
		t.Fatalf("status %d, want 200", code)
	}
	var served string
	for line := range strings.Lines(g.stderr.String()) {
		var rec struct{ Msg, Client string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "access" {
			served = rec.Client
		}
	}
	if served == "" {
		t.Fatalf("no access record:\n%s", g.stderr.String())
	}

	// The same client in a combined log (a load balancer's, say), with an
	// IPv6 client beside it.
	log := filepath.Join(t.TempDir(), "access.log")
	lines := `127.0.0.1 - - [30/Nov/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"` + "\n" +
		`127.0.0.1 - - [30/Nov/2026:10:00:01 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"` + "\n" +
		`2001:db8:1:2::7 - - [30/Nov/2026:10:00:02 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"` + "\n"
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	// What the gateway would log for the IPv6 client: its /64, hashed.
	ip6 := telemetry.NewKeyHasher(key).Hash((&clientip.Resolver{}).KeyPrefix(netip.MustParseAddr("2001:db8:1:2::7")).AppendTo(nil))

	clients := func(v map[string]any) []any {
		var out []any
		for _, c := range v["top_clients"].([]any) {
			out = append(out, c.(map[string]any)["client"])
		}
		return out
	}
	want := []any{served, ip6}
	if got := clients(decode(t, vars, "baseline", "--json", log)); !cmp.Equal(got, want) {
		t.Errorf("baseline's top clients = %v, want %v (the gateway's hash of 127.0.0.1 first)", got, want)
	}
	if got := clients(decode(t, vars, "logs", "peak-rate", "--json", log)); !cmp.Equal(got, want) {
		t.Errorf("logs peak-rate's top clients = %v, want %v", got, want)
	}
}
