package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/testnet"
)

// startMaveDB runs `floodgate serve --config examples/mavedb.yaml --store
// URL` in-process, behind a trusted proxy, in front of upstream.
func startMaveDB(t *testing.T, store, upstream string, extra ...string) *gatewayProc {
	t.Helper()
	g := &gatewayProc{t: t}
	g.launch(func() map[string]string {
		return map[string]string{
			"FLOODGATE_LISTEN": g.pub, "FLOODGATE_ADMIN_LISTEN": g.adm, "FLOODGATE_UPSTREAM": upstream,
			"FLOODGATE_TRUSTED_PROXIES": "127.0.0.0/8",
		}
	}, append([]string{"serve", "--config", "../../examples/mavedb.yaml", "--store", store, "--no-watch"}, extra...))
	return g
}

func (g *gatewayProc) get(path, client string, hdr ...string) (int, http.Header) {
	g.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+g.pub+path, nil)
	req.Header.Set("X-Forwarded-For", client)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("GET %s: %v", path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// waitRedisUp sends requests until the gateway's Redis store is up again
// (it learns so from a successful decision), for a bounded time.
func (g *gatewayProc) waitRedisUp() {
	g.t.Helper()
	// Up, and a decision made without a store error (the gauge may say
	// up a moment before the connection takes decisions again).
	for range 500 {
		before := g.metric("floodgate_store_errors_total")
		g.get("/healthz-probe", "192.0.2.200")
		if g.metric("floodgate_redis_up") == 1 && g.metric("floodgate_store_errors_total") == before {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("the Redis store never came back up; log:\n%s", g.stderr.String())
}

func okUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	t.Cleanup(up.Close)
	return up.URL
}

// TestThreeReplicasShareOneLimit: three gateways sharing one Redis, taking
// turns on 1600 requests from one client, admit exactly 1500 and answer
// 100 with 429.
func TestThreeReplicasShareOneLimit(t *testing.T) {
	rs := redistest.Start(t)
	up := okUpstream(t)
	var gws []*gatewayProc
	for range 3 {
		// A generous store timeout: on a loaded machine a decision that
		// times out fails open (admitted), which is the policy, not a
		// counting error; this test is about exact counting.
		gws = append(gws, startMaveDB(t, rs.URL()+"?timeout=5s", up))
	}
	codes := map[int]int{}
	for i := range 1600 {
		code, _ := gws[i%3].get("/api/v1/score-sets", "203.0.113.7")
		codes[code]++
	}
	if codes[200] != 1500 || codes[429] != 100 {
		errs := 0.0
		for _, g := range gws {
			errs += g.metric("floodgate_store_errors_total")
		}
		t.Errorf("statuses %v, want exactly 1500×200 and 100×429 (store errors, admitted by fail open: %v)", codes, errs)
	}
	// Each replica alone would have admitted up to 1500: the limit is
	// shared, not multiplied.
	if code, _ := gws[0].get("/api/v1/score-sets", "198.51.100.1"); code != 200 {
		t.Errorf("another client: %d, want 200", code)
	}
}

// readyz returns /readyz's status and body.
func (g *gatewayProc) readyz() (int, string) {
	g.t.Helper()
	resp, err := http.Get("http://" + g.adm + "/readyz")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestNotReadyUntilTheStoreAnswers: a replica whose Redis has not answered
// since it started (a wrong address or password in a deploy) is not ready,
// so a rolling deploy stops at it; once Redis has answered, the replica is
// ready, and stays ready through a later outage (every replica shares it).
func TestNotReadyUntilTheStoreAnswers(t *testing.T) {
	rs := redistest.Start(t)
	rs.Kill()
	g := startMaveDB(t, rs.URL()+"?timeout=5s", okUpstream(t))
	// The answer names no address (the endpoint is open), and says where
	// the operator finds why.
	if code, body := g.readyz(); code != 503 || body != "not ready: the store has not answered since start (the log and the dashboard say why)\n" {
		t.Fatalf("/readyz before Redis ever answered: %d %q, want 503 pointing at the log and the dashboard", code, body)
	}
	rs.Restart()
	g.waitRedisUp()
	if code, body := g.readyz(); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz with Redis up: %d %q, want 200", code, body)
	}
	rs.Kill()
	if code, body := g.readyz(); code != 200 || !strings.Contains(body, "ready; store: ") {
		t.Errorf("/readyz with Redis down after it answered: %d %q, want 200 naming the store", code, body)
	}
}

// TestNotReadyWhileTheStoreCannotDecide: a Redis that answers PING but
// refuses floodgate's decisions (an ACL user denied its keys here; the
// address of a read-only replica is the same) is no store: the replica
// is not ready, and says why in its log, until a decision succeeds.
func TestNotReadyWhileTheStoreCannotDecide(t *testing.T) {
	rs := redistest.Start(t)
	if out, err := rs.Do("ACL", "SETUSER", "fg", "on", ">fg-secret-pass", "~other:*", "+@all"); err != nil {
		t.Fatalf("ACL SETUSER: %v (%s)", err, out)
	}
	g := startMaveDB(t, "redis://fg:fg-secret-pass@"+rs.Addr()+"?timeout=5s", okUpstream(t))
	if code, body := g.readyz(); code != 503 || !strings.Contains(body, "the store has not answered since start") {
		t.Fatalf("/readyz with floodgate's keys denied: %d %q, want 503", code, body)
	}
	if log := g.stderr.String(); !strings.Contains(log, "NOPERM") || strings.Contains(log, "fg-secret-pass") {
		t.Errorf("log with floodgate's keys denied, want NOPERM said, never the password:\n%s", log)
	}
	if out, err := rs.Do("ACL", "SETUSER", "fg", "allkeys"); err != nil {
		t.Fatalf("ACL SETUSER: %v (%s)", err, out)
	}
	if code, body := g.readyz(); code != 200 || body != "ready\n" {
		t.Errorf("/readyz once the keys are allowed: %d %q, want 200", code, body)
	}
}

// TestRedisDownFailOpenAndRecovery: with Redis killed under traffic every
// request is still answered (fail open, the default) and the store errors
// are counted; once Redis is back, limits apply again without restarting
// the gateway.
func TestRedisDownFailOpenAndRecovery(t *testing.T) {
	rs := redistest.Start(t)
	g := startMaveDB(t, rs.URL()+"?timeout=5s", okUpstream(t))
	for range 10 {
		if code, _ := g.get("/api/v1/score-sets", "203.0.113.8"); code != 200 {
			t.Fatalf("before the outage: %d", code)
		}
	}
	rs.Kill()
	for i := range 50 {
		if code, _ := g.get("/api/v1/score-sets", "203.0.113.8"); code != 200 {
			t.Fatalf("request %d with Redis down: %d, want 200 (fail open)", i, code)
		}
	}
	if n := g.metric("floodgate_store_errors_total"); n < 50 {
		t.Errorf("floodgate_store_errors_total = %v, want ≥ 50", n)
	}
	if n := g.metric(`floodgate_store_degraded_decisions_total{policy="fail_open",rule="rate-limit-ip"}`); n < 50 {
		t.Errorf("degraded fail_open decisions of rate-limit-ip = %v, want ≥ 50", n)
	}
	// Still ready: every replica shares the store, and a readiness probe
	// failing on it would take them all out of the load balancer while
	// fail open answers every request. /readyz says what is wrong.
	if code, body := g.readyz(); code != 200 || !strings.Contains(body, "ready; store: not answering") || strings.Contains(body, "127.0.0.1") {
		t.Errorf("/readyz with Redis down: %d %q, want 200 saying the store does not answer, without its address", code, body)
	}

	rs.Restart() // an empty Redis: the counters start afresh
	g.waitRedisUp()
	// Limits apply again: the CSV limit (100/5m) admits the first 100 and
	// refuses after them. (Usually the 101st; the counters run on the real
	// clock, and when the requests straddle a 5-minute boundary the
	// sliding window weighs the earlier ones down and admits a few more.)
	// A connection made before the restart may still fail one request
	// after the store is back (EOF), and the store then fails fast for a
	// moment, open: such a request is not counted by Redis, so it is not
	// counted here either, and the test waits for the store again.
	first, counted := 0, 0
	for i := 0; i < 250 && first == 0; i++ {
		errs := g.metric("floodgate_store_errors_total")
		code, _ := g.get("/api/v1/score-sets/urn:mavedb:1/scores", "203.0.113.9")
		switch {
		case g.metric("floodgate_store_errors_total") != errs:
			if code != 200 {
				t.Fatalf("after recovery, CSV request %d with a store error: %d, want 200 (fail open)", i+1, code)
			}
			g.waitRedisUp()
		case code == 429:
			first = counted + 1
		case code == 200:
			counted++
		default:
			t.Fatalf("after recovery, CSV request %d: %d", i+1, code)
		}
	}
	if first <= 100 {
		t.Errorf("after recovery, the first 429 was counted request %d of the CSV limit 100/5m, want after the 100th (0: none in 250); store errors %v, degraded %v, redis up %v; log:\n%s", first,
			g.metric("floodgate_store_errors_total"), g.metric(`floodgate_store_degraded_decisions_total{policy="fail_open",rule="rate-limit-csv-endpoints"}`),
			g.metric("floodgate_redis_up"), g.stderr.String())
	}
}

// TestFailClosedAnswers503: a fail_closed rule answers 503 with
// Retry-After while the store is down.
func TestFailClosedAnswers503(t *testing.T) {
	rs := redistest.Start(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "closed.yaml")
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	os.WriteFile(conf, []byte(fmt.Sprintf(`
listen: %s
admin: {listen: %q}
store: {url: %q, timeout: 5s}
upstreams: {api: {url: %q}}
rules:
  - {name: logins, when: "request.path == '/login'", limits: [10/1m], failure_policy: fail_closed, retry_after: 20s}
  - {name: rest, limits: [1000/1m]}
`, pub, adm, rs.URL(), okUpstream(t))), 0o600)
	g := &gatewayProc{t: t, pub: pub, adm: adm, done: make(chan int, 1), stderr: &testnet.Buffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-g.done }()
	go func() {
		g.done <- run1(ctx, environ{lookup: func(string) (string, bool) { return "", false }, stdout: io.Discard, stderr: g.stderr},
			[]string{"serve", "--config", conf, "--no-watch"})
	}()
	waitFor(t, "http://"+adm+"/healthz")
	if code, _ := g.get("/login", "203.0.113.1"); code != 200 {
		t.Fatalf("with Redis up: %d", code)
	}
	rs.Kill()
	code, h := g.get("/login", "203.0.113.1")
	if code != 503 || h.Get("Retry-After") != "20" {
		t.Errorf("fail_closed rule with Redis down: %d Retry-After %q, want 503 and 20", code, h.Get("Retry-After"))
	}
	if code, _ := g.get("/other", "203.0.113.1"); code != 200 {
		t.Errorf("fail_open rule with Redis down: %d, want 200", code)
	}
	if !strings.Contains(g.stderr.String(), "floodgate started") {
		t.Errorf("no start record:\n%s", g.stderr.String())
	}
}

// TestStartsWithRedisDown: a gateway started while Redis is down serves
// (fail open) instead of crash-looping, and uses Redis once it is up.
func TestStartsWithRedisDown(t *testing.T) {
	rs := redistest.Start(t)
	rs.Kill() // its port is now free, and nothing answers on it
	g := startMaveDB(t, rs.URL()+"?timeout=5s", okUpstream(t))
	if code, _ := g.get("/api/v1/score-sets", "203.0.113.2"); code != 200 {
		t.Errorf("with Redis never up: %d, want 200", code)
	}
	rs.Restart()
	g.waitRedisUp()
	codes := map[int]int{}
	for range 101 {
		code, _ := g.get("/api/v1/score-sets/urn:mavedb:1/scores", "203.0.113.3")
		codes[code]++
	}
	if codes[429] != 1 {
		t.Errorf("once Redis is up: %v, want the 101st CSV request refused", codes)
	}
}

// TestClusterStore: the example works with --store naming three cluster
// nodes, and its keys land in the cluster.
func TestClusterStore(t *testing.T) {
	c := redistest.StartCluster(t)
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	g := startMaveDB(t, "redis://"+strings.Join(addrs, ",")+"?timeout=5s", okUpstream(t))
	codes := map[int]int{}
	for range 101 {
		code, _ := g.get("/api/v1/score-sets/urn:mavedb:1/scores", "203.0.113.4")
		codes[code]++
	}
	if codes[200] != 100 || codes[429] != 1 {
		t.Errorf("through the cluster: %v, want 100×200 and the 101st refused", codes)
	}
	keys := 0
	for _, n := range c.Nodes {
		out, err := n.Do("DBSIZE")
		if err != nil {
			t.Fatal(err)
		}
		var k int
		fmt.Sscan(out, &k)
		keys += k
	}
	if keys == 0 {
		t.Error("no keys in the cluster")
	}
}

// TestStartLogsTheTimeoutInForce: a Redis URL's ?timeout= replaces the
// default store.timeout, and the start-up line says which is in force,
// not the file's default.
func TestStartLogsTheTimeoutInForce(t *testing.T) {
	rs := redistest.Start(t)
	g := startMaveDB(t, rs.URL()+"?timeout=5s", okUpstream(t))
	const line = `"msg":"counters are in Redis`
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(g.stderr.String(), line); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s line; log:\n%s", line, g.stderr.String())
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not an assertion
	}
	for _, l := range strings.Split(g.stderr.String(), "\n") {
		if strings.Contains(l, line) && !strings.Contains(l, `"timeout":"5s"`) {
			t.Errorf("start-up line %s, want the timeout in force, 5s", l)
		}
	}
}
