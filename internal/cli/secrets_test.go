package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/testnet"
)

// One client has one hash in the access log of every process keyed by
// FLOODGATE_LOG_HASH_KEY (replicas, a restart), so that floodgate replay
// and logs count it once; without the key each process draws its own.
func TestAccessLogHashKey(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	yaml := opsYAML(up.URL, "100/1m") + "log: {access: stderr}\n"
	clientHash := func(key string) string {
		t.Helper()
		var env map[string]string
		if key != "" {
			env = map[string]string{hashKeyVar: key}
		}
		g := startServeEnv(t, env, yaml)
		if code := g.status("/a"); code != 200 {
			t.Fatalf("status %d", code)
		}
		for line := range strings.Lines(g.stderr.String()) {
			var rec struct{ Msg, Client string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "access" {
				return rec.Client
			}
		}
		t.Fatalf("no access record in the log:\n%s", g.stderr.String())
		return ""
	}
	const key = "0123456789abcdef0123456789abcdef"
	if a, b := clientHash(key), clientHash(key); a != b || a == "" {
		t.Errorf("two processes with one key hash one client as %q and %q", a, b)
	}
	if a, b := clientHash(""), clientHash(""); a == b {
		t.Errorf("two processes without a key hash one client alike (%q): the key is not drawn", a)
	}
}

// A key too short to keep the hashes from being reversed is refused by
// every command that shows clients as hashes: the gateway's logs, explain,
// and the reports of baseline and logs, which are made to be shared.
func TestShortHashKeyRefused(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "floodgate.yaml")
	if err := os.WriteFile(conf, []byte(opsYAML("http://127.0.0.1:1", "1/1m")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--config", conf}, {"explain", "--config", conf, "GET", "/a"},
		{"baseline", excerptLog}, {"baseline", "--json", excerptLog},
		{"logs", "limited-clients", excerptLog}, {"logs", "peak-rate", excerptLog},
	} {
		stderr := &testnet.Buffer{}
		env := environ{lookup: func(k string) (string, bool) {
			v, ok := map[string]string{"PUB": "127.0.0.1:0", "ADM": "127.0.0.1:0", hashKeyVar: "short"}[k]
			return v, ok
		}, stdout: io.Discard, stderr: stderr}
		if code := run1(context.Background(), env, args); code == 0 {
			t.Errorf("%s with a 5-byte key: exit 0", args[0])
		}
		if !strings.Contains(stderr.String(), "FLOODGATE_LOG_HASH_KEY is 5 bytes") {
			t.Errorf("%s: the refusal does not name the variable:\n%s", args[0], stderr.String())
		}
	}
}

// A rejected reload logs every problem, and a problem may quote a URL
// back: none of its passwords reach the log, nor the error of a start
// refused for a bad --store.
func TestURLPasswordsNeverLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, opsYAML(up.URL, "5/1h"))
	g.write(`
listen: ${PUB}
admin: {listen: "${ADM}"}
store: {url: "redis://:REDISPASS/q1w2e3+Zz@127.0.0.1:1"}
upstreams:
  api:
    url: "` + up.URL + `"
    auth: {type: client_credentials, client_id: a, client_secret: b, token_url: "https://svc:TOKENURLPASS-42@auth.example/token"}
  web: {url: "http://u:UP/STREAMPASS-3@127.0.0.1:1"}
routes: [{name: r, path: /, upstream: api}]
`)
	g.waitMetric(reloadFailed, 1)
	log := g.stderr.String()
	if !strings.Contains(log, "configuration rejected") {
		t.Fatalf("no rejection logged:\n%s", log)
	}
	for _, pw := range []string{"REDISPASS", "q1w2e3", "TOKENURLPASS", "STREAMPASS"} {
		if strings.Contains(log, pw) {
			t.Errorf("the rejection logs the password %q:\n%s", pw, log)
		}
	}

	code, _, stderr := run(t, nil, "serve", "--config", g.conf, "--store", "redis://:REDISPASS/q1w2e3+Zz@127.0.0.1:1")
	if code == 0 || strings.Contains(stderr, "REDISPASS") || strings.Contains(stderr, "q1w2e3") {
		t.Errorf("serve --store with a password holding \"/\": exit %d, stderr:\n%s", code, stderr)
	}
}
