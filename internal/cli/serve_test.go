package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/testnet"
	"github.com/google/go-cmp/cmp"
)

// waitFor polls url until it answers, for at most a generous bound: it
// waits for start-up, it does not time anything.
func waitFor(t *testing.T, url string) {
	t.Helper()
	for range 500 {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never answered", url)
}

// TestServeQuickStart runs the README's MaveDB command in-process: the
// MaveDB example with the sample upstream, then stops it as SIGTERM would.
func TestServeQuickStart(t *testing.T) {
	pub, adm, up := testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)
	vars := map[string]string{
		"FLOODGATE_LISTEN":       pub,
		"FLOODGATE_ADMIN_LISTEN": adm,
		"FLOODGATE_UPSTREAM":     "http://" + up,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testnet.Buffer
	env := environ{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, stdout: io.Discard, stderr: &stderr}
	done := make(chan int, 1)
	go func() {
		done <- run1(ctx, env, []string{"serve", "--config", "../../examples/mavedb.yaml", "--sample-upstream"})
	}()
	waitFor(t, "http://"+adm+"/healthz")

	resp, err := http.Get("http://" + pub + "/api/v1/score-sets")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"upstream":"api"`) {
		t.Errorf("through the gateway: %d %s, want 200 from the sample upstream", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", "http://"+pub+"/api/v1/x/scores", nil)
	req.Header.Set("User-Agent", "GPTBot/1.2")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 403 {
		t.Errorf("GPTBot on /scores: %v %v, want 403", resp, err)
	} else {
		resp.Body.Close()
	}
	resp, err = http.Get("http://" + adm + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `floodgate_rule_decisions_total{decision="denied",listener="gateway",rule="block-ai-crawlers-on-csv"} 1`) {
		t.Errorf("metrics lack the denial:\n%.3000s", body)
	}

	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exit code = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"shutting down:`) {
		t.Errorf("no shutdown record in the log:\n%s", stderr.String())
	}
}

func TestServeRefusesInvalidConfig(t *testing.T) {
	// Every problem, as validate prints them: the file's unknown key and
	// what only compiling finds (a condition, a limit) alike.
	code, _, stderr := run(t, nil, "serve", "--config", "testdata/invalid.yaml")
	if code != 1 {
		t.Errorf("serve on an invalid file: code %d, want 1", code)
	}
	_, _, want := run(t, nil, "validate", "--config", "testdata/invalid.yaml")
	if diff := cmp.Diff(want, stderr); diff != "" || !strings.Contains(stderr, ": 3 problems") {
		t.Errorf("serve's report differs from validate's (-validate +serve):\n%s", diff)
	}
}

func TestSampleUpstreamOnlyOnLoopback(t *testing.T) {
	code, _, stderr := run(t, map[string]string{"FLOODGATE_UPSTREAM": "http://192.0.2.1:8081"},
		"serve", "--config", "../../examples/mavedb.yaml", "--sample-upstream", "--listen", testnet.FreeAddr(t), "--admin-listen", "off")
	if code != 1 || !strings.Contains(stderr, "not a loopback") {
		t.Errorf("code %d, stderr %q", code, stderr)
	}
}
