package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// stepClock is a clock the test moves by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// failureHarness runs a gateway for yaml whose log goes to a buffer and
// whose Failures run on a clock the test steps (flushes are left to the
// events and to the test).
type failureHarness struct {
	*harness
	clock *stepClock
	buf   *testnet.Buffer
}

func newFailureHarness(t *testing.T, yaml string) *failureHarness {
	t.Helper()
	f, err := config.Parse("failures.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	store, closer, err := gateway.NewStore(&f.Config.Store, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	buf := new(testnet.Buffer)
	logger := slog.New(slog.NewJSONHandler(buf, nil))
	clock := &stepClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	failures := telemetry.NewFailures(logger, m, telemetry.LogLimiterOptions{
		Interval: 10 * time.Second, Now: clock.Now, AfterFunc: func(time.Duration, func()) {},
	})
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{Store: store, Metrics: m, Logger: logger, Failures: failures})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ts := newFront(t, srv)
	t.Cleanup(ts.Close)
	return &failureHarness{
		harness: &harness{t: t, gw: ts, client: frontClient(t), admin: admin.Handler(admin.Options{Gatherer: m.Registry})},
		clock:   clock, buf: buf,
	}
}

// lines returns the log's lines with message msg, without their time,
// and the whole log.
func (h *failureHarness) lines(msg string) ([]map[string]any, string) {
	h.t.Helper()
	all := h.buf.String()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(all), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			h.t.Fatalf("not a JSON line: %q", line)
		}
		if m["msg"] == msg {
			delete(m, "time")
			out = append(out, m)
		}
	}
	return out, all
}

// TestUpstreamFailureLogged: a request the upstream fails (nothing
// listens there) is answered 502, counted in
// floodgate_upstream_errors_total, and logged with its route, upstream
// and kind, one line per interval however many fail, without the
// client's address.
func TestUpstreamFailureLogged(t *testing.T) {
	dead := testnet.FreeAddr(t)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "http://`+dead+`"}}
routes:
  - {name: search, path: /search, upstream: api}
  - {name: other, path: /other, upstream: api}
`)
	if got := h.repeat(50, "GET", "/search", "203.0.113.7"); !cmp.Equal(got, map[int]int{502: 50}) {
		t.Fatalf("answers %v, want 50 × 502", got)
	}
	want := []map[string]any{{"level": "WARN", "msg": "upstream failed", "route": "search", "upstream": "api",
		"kind": "refused", "count": 1.0, "interval": "10s"}}
	got, all := h.lines("upstream failed")
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("upstream failed lines (-got +want):\n%s\nlog:\n%s", diff, all)
	}
	if strings.Contains(all, "203.0.113.7") {
		t.Errorf("the log holds the client's address:\n%s", all)
	}
	series := `floodgate_upstream_errors_total{kind="refused",upstream="api"}`
	if v := h.metric(series); v != 50 {
		t.Errorf("%s = %v, want 50", series, v)
	}
	if v := h.metric(`floodgate_upstream_errors_total{kind="timeout",upstream="api"}`); v != 0 {
		t.Errorf("timeout series = %v, want 0 (present before any timeout)", v)
	}
	// Once the interval has passed, the next failure writes the count of
	// those since the last line, itself included.
	h.clock.Advance(10 * time.Second)
	h.repeat(1, "GET", "/other", "203.0.113.7")
	got, all = h.lines("upstream failed")
	want = append(want, map[string]any{"level": "WARN", "msg": "upstream failed", "route": "other", "upstream": "api",
		"kind": "refused", "count": 50.0, "interval": "10s"})
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("after the interval (-got +want):\n%s\nlog:\n%s", diff, all)
	}
}

// TestStoreOutageLogged: with a Redis store that cannot be reached, each
// request is decided by the failure policy; the log says the store is
// failing once, and the rules skipped one line per interval with their
// count, not one line per request.
func TestStoreOutageLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "redis://`+testnet.FreeAddr(t)+`", timeout: 100ms}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - {name: per-ip, limits: [100/1m]}
  - {name: per-path, key: [path], limits: [100/1m]}
`)
	if got := h.repeat(40, "GET", "/x", "203.0.113.7"); !cmp.Equal(got, map[int]int{200: 40}) {
		t.Fatalf("answers %v, want 40 × 200 (fail open)", got)
	}
	failing, all := h.lines("store failing")
	if len(failing) != 1 {
		t.Errorf("%d store failing lines, want 1:\n%s", len(failing), all)
	}
	skipped, _ := h.lines("rule skipped")
	if len(skipped) != 1 || skipped[0]["count"] != 1.0 || skipped[0]["kind"] != "store" {
		t.Errorf("rule skipped lines: %v, want one with count 1 and kind store\nlog:\n%s", skipped, all)
	}
	h.clock.Advance(10 * time.Second)
	h.repeat(1, "GET", "/x", "203.0.113.7")
	skipped, all = h.lines("rule skipped")
	// 40 requests × 2 rules, and the next request's first rule.
	if len(skipped) != 2 || skipped[1]["count"] != 80.0 {
		t.Errorf("rule skipped lines after the interval: %v, want a second with count 80\nlog:\n%s", skipped, all)
	}
	if strings.Contains(all, "203.0.113.7") {
		t.Errorf("the log holds the client's address:\n%s", all)
	}
}

// TestStoreOutageFailClosedLogged: a rule that fails closed is not
// skipped: its 503s are logged as refusals, one line per interval.
func TestStoreOutageFailClosedLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "redis://`+testnet.FreeAddr(t)+`", timeout: 100ms, failure_policy: fail_closed}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - {name: per-ip, limits: [100/1m]}
`)
	if got := h.repeat(5, "GET", "/x", "203.0.113.7"); !cmp.Equal(got, map[int]int{503: 5}) {
		t.Fatalf("answers %v, want 5 × 503 (fail closed)", got)
	}
	refused, all := h.lines("rule refused while its store fails")
	skipped, _ := h.lines("rule skipped")
	if len(refused) != 1 || refused[0]["rule"] != "per-ip" || len(skipped) != 0 {
		t.Errorf("%d refused and %d skipped lines, want 1 and 0:\n%s", len(refused), len(skipped), all)
	}
}

// TestStoreOutageWithCachedRefusals: while a Redis store is down, a client
// over its limit is still refused from the store's over-limit cache. Those
// refusals are not the store answering: the log says it is failing once,
// and never that it answers again until Redis does.
func TestStoreOutageWithCachedRefusals(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	srv := redistest.Start(t)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "`+srv.URL()+`", timeout: 100ms}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - {name: per-ip, limits: [1/1h]}
`)
	// Until the store has connected, requests pass by the failure policy;
	// a refusal says it counts.
	for deadline := time.Now().Add(redistest.ReadyTimeout); h.repeat(1, "GET", "/x", "203.0.113.7")[429] != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("no 429 from the Redis store after %v", redistest.ReadyTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	failingBefore, _ := h.lines("store failing")
	againBefore, _ := h.lines("store answering again")
	srv.Kill()
	for i := range 10 {
		if got := h.repeat(1, "GET", "/x", "203.0.113.7"); got[429] != 1 {
			t.Errorf("round %d: the client over its limit got %v, want 429 from the cache", i, got)
		}
		h.repeat(1, "GET", "/x", "198.51.100."+strconv.Itoa(i+1)) // the failure policy's
	}
	failing, all := h.lines("store failing")
	again, _ := h.lines("store answering again")
	if len(failing)-len(failingBefore) != 1 || len(again) != len(againBefore) {
		t.Errorf("%d store failing and %d answering again lines with Redis down all along, want 1 and 0:\n%s",
			len(failing)-len(failingBefore), len(again)-len(againBefore), all)
	}
}

// TestStoreErrorRepliesWithCachedRefusals: while Redis answers every
// decision with an error (out of memory under noeviction), a client over
// its limit is still refused from the over-limit cache. Those refusals
// are not Redis answering: the log says the store is failing once, and
// that it answers again only once Redis decides again.
func TestStoreErrorRepliesWithCachedRefusals(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	srv := redistest.Start(t)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
store: {url: "`+srv.URL()+`", timeout: 100ms}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - {name: per-ip, limits: [1/1h]}
`)
	for deadline := time.Now().Add(redistest.ReadyTimeout); h.repeat(1, "GET", "/x", "203.0.113.7")[429] != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("no 429 from the Redis store after %v", redistest.ReadyTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	failingBefore, _ := h.lines("store failing")
	againBefore, _ := h.lines("store answering again")
	for _, cmd := range [][]string{{"CONFIG", "SET", "maxmemory-policy", "noeviction"}, {"CONFIG", "SET", "maxmemory", "1"}} {
		if _, err := srv.Do(cmd...); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	for i := range 10 {
		if got := h.repeat(1, "GET", "/x", "198.51.100."+strconv.Itoa(i+1)); got[200] != 1 { // the failure policy's
			t.Errorf("round %d: a new client with Redis out of memory got %v, want 200 (fail open)", i, got)
		}
		if got := h.repeat(1, "GET", "/x", "203.0.113.7"); got[429] != 1 {
			t.Errorf("round %d: the client over its limit got %v, want 429 from the cache", i, got)
		}
	}
	failing, all := h.lines("store failing")
	again, _ := h.lines("store answering again")
	if len(failing)-len(failingBefore) != 1 || len(again) != len(againBefore) {
		t.Errorf("%d store failing and %d answering again lines with Redis out of memory all along, want 1 and 0:\n%s",
			len(failing)-len(failingBefore), len(again)-len(againBefore), all)
	}
	if _, err := srv.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	h.repeat(1, "GET", "/x", "198.51.100.100")
	if again, all := h.lines("store answering again"); len(again)-len(againBefore) != 1 {
		t.Errorf("%d answering again lines once Redis decides again, want 1:\n%s", len(again)-len(againBefore), all)
	}
}

// TestRuleFailureLogsNoClientValue: CEL's runtime errors name the value
// they failed on, and here those values are a cookie, the client's
// address, an API key, a bearer token and a header: the rule skipped
// lines say what failed, never on what.
func TestRuleFailureLogsNoClientValue(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - {name: cookie-map, action: count, when: "{'x': 1}[request.headers['cookie']] == 1", limits: [100/1m]}
  - {name: allowlist, action: count, when: "{'10.0.0.1': true}[client.ip]", limits: [100/1m]}
  - {name: plan-lookup, action: count, when: "{'gold': 1}[request.headers['x-api-key']] == 1", limits: [100/1m]}
  - {name: keymap, action: count, key: ["expr:{'a': 'b'}[request.headers['authorization']]"], limits: [100/1m]}
  - {name: ts, action: count, when: "timestamp(request.headers['x-date']) > timestamp('2020-01-01T00:00:00Z')", limits: [100/1m]}
  - {name: num, action: count, when: "int(request.query['n']) > 1", limits: [100/1m]}
`)
	secrets := []string{"SESSCOOKIE-zq9x", "2001:db8::77", "APIKEY-k7w3", "BEARER-t0k3n-9f", "DATEVAL-abc", "QUERYVAL-5"}
	if got := h.repeat(3, "GET", "/p?n=QUERYVAL-5", "2001:db8::77", "Cookie", "ovSession=SESSCOOKIE-zq9x",
		"X-Api-Key", "APIKEY-k7w3", "Authorization", "Bearer BEARER-t0k3n-9f", "X-Date", "DATEVAL-abc"); !cmp.Equal(got, map[int]int{200: 3}) {
		t.Fatalf("answers %v, want 3 × 200", got)
	}
	skipped, all := h.lines("rule skipped")
	if len(skipped) != 6 {
		t.Errorf("%d rule skipped lines, want one for each of the 6 rules:\n%s", len(skipped), all)
	}
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("the log holds the client's %q:\n%s", s, all)
		}
	}
	if !strings.Contains(all, `"error":"no such key"`) {
		t.Errorf("the lines no longer say what failed:\n%s", all)
	}
}

// TestRuleFailureKind: a rule whose condition fails to evaluate is counted
// and logged as kind=condition whatever its action, and one whose key
// expression fails as kind=key.
func TestRuleFailureKind(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	tests := []struct {
		name, rule string
		kind       string
	}{
		{"deny-cond", `{name: deny-cond, action: deny, when: "request.headers['x-missing'] == 'a'"}`, "condition"},
		{"block-cond", `{name: block-cond, when: "request.headers['x-missing'] == 'a'", limits: [10/1m]}`, "condition"},
		{"count-cond", `{name: count-cond, action: count, when: "request.headers['x-missing'] == 'a'", limits: [10/1m]}`, "condition"},
		{"block-key", `{name: block-key, key: ["expr:request.headers['x-missing']"], limits: [10/1m]}`, "key"},
		{"count-key", `{name: count-key, action: count, key: ["expr:request.headers['x-missing']"], limits: [10/1m]}`, "key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "`+up.URL+`"}}
rules:
  - `+tc.rule+`
`)
			if got := h.repeat(1, "GET", "/a", "203.0.113.7"); !cmp.Equal(got, map[int]int{200: 1}) {
				t.Fatalf("answers %v, want 1 × 200 (the rule skipped)", got)
			}
			for _, kind := range []string{"condition", "key", "store"} {
				want := 0.0
				if kind == tc.kind {
					want = 1
				}
				series := `floodgate_rule_errors_total{kind="` + kind + `",rule="` + tc.name + `"}`
				if v := h.metric(series); v != want {
					t.Errorf("%s = %v, want %v", series, v, want)
				}
			}
			skipped, all := h.lines("rule skipped")
			if len(skipped) != 1 || skipped[0]["rule"] != tc.name || skipped[0]["kind"] != tc.kind {
				t.Errorf("rule skipped lines: %v, want one for %s with kind %s\nlog:\n%s", skipped, tc.name, tc.kind, all)
			}
		})
	}
}

// TestUpstreamFailureMidBodyLogged: an upstream that fails after its
// answer's head went to the client (bad chunked framing, a body shorter
// than its length) cuts that answer off, and is logged and counted as a
// failure of its kind, as one that fails before answering is.
func TestUpstreamFailureMidBodyLogged(t *testing.T) {
	for _, tc := range []struct {
		name, answer, kind string
	}{
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\nzz\r\n", "bad_response"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly twenty bytes...", "reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						br := bufio.NewReader(c)
						if _, err := http.ReadRequest(br); err != nil {
							return
						}
						io.WriteString(c, tc.answer)
					}()
				}
			}()
			h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "http://`+ln.Addr().String()+`"}}
routes: [{name: search, path: /search, upstream: api}]
`)
			req, _ := http.NewRequest("GET", h.gw.URL+"/search", nil)
			req.Header.Set("X-Forwarded-For", "203.0.113.7")
			resp, err := h.client.Do(req)
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatal("the client read a whole answer; want it cut off")
			}
			got, all := h.lines("upstream failed")
			if len(got) != 1 || got[0]["kind"] != tc.kind || got[0]["route"] != "search" {
				t.Errorf("upstream failed lines: %v, want one of kind %s on route search\nlog:\n%s", got, tc.kind, all)
			}
			if n := h.metric(`floodgate_upstream_errors_total{kind="` + tc.kind + `",upstream="api"}`); n != 1 {
				t.Errorf("floodgate_upstream_errors_total{kind=%q} = %v, want 1", tc.kind, n)
			}
		})
	}
}

// TestClientAddressFallbackLogged: a trusted proxy whose forwarding
// header names no client, or names a private address that forwarded
// someone else's request (a proxy in front that is not trusted), puts
// every client in one bucket; the log says so, one line per case per
// interval with its count, without any address. A client found as
// intended writes nothing.
func TestClientAddressFallbackLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	h := newFailureHarness(t, `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "`+up.URL+`"}}
routes: [{name: api, path: /, upstream: api}]
rules: [{name: per-ip, key: [ip], limits: [1000/1m]}]
`)
	if got := h.repeat(5, "GET", "/", "198.51.100.7"); !cmp.Equal(got, map[int]int{200: 5}) {
		t.Fatalf("answers %v, want 5 × 200", got)
	}
	if _, all := h.lines(""); strings.Contains(all, "client address") {
		t.Fatalf("a client found as intended is logged:\n%s", all)
	}
	h.repeat(3, "GET", "/", "")
	h.repeat(4, "GET", "/", "198.51.100.7, 10.1.2.3")
	h.clock.Advance(10 * time.Second)
	h.repeat(1, "GET", "/", "")
	h.repeat(1, "GET", "/", "198.51.100.8, 10.1.2.3")
	noClient := "the forwarding header names no address outside the trusted proxies: the request is keyed by a proxy's address (the peer's, or the header's leftmost entry)"
	relay := "the client address is a private one that forwarded another's request: a proxy in front is likely missing from client_ip.trusted_proxies, and every client behind it shares its key"
	for _, tt := range []struct {
		msg  string
		want []map[string]any
	}{
		{noClient, []map[string]any{
			{"level": "WARN", "msg": noClient, "header": "X-Forwarded-For", "listener": "gateway", "count": 1.0, "interval": "10s"},
			{"level": "WARN", "msg": noClient, "header": "X-Forwarded-For", "listener": "gateway", "count": 3.0, "interval": "10s"},
		}},
		{relay, []map[string]any{
			{"level": "WARN", "msg": relay, "header": "X-Forwarded-For", "listener": "gateway", "count": 1.0, "interval": "10s"},
			{"level": "WARN", "msg": relay, "header": "X-Forwarded-For", "listener": "gateway", "count": 4.0, "interval": "10s"},
		}},
	} {
		got, all := h.lines(tt.msg)
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("%q lines (-got +want):\n%s\nlog:\n%s", tt.msg, diff, all)
		}
	}
	if _, all := h.lines(""); strings.Contains(all, "10.1.2.3") || strings.Contains(all, "198.51.100") || strings.Contains(all, "127.0.0.1") {
		t.Errorf("the log holds an address:\n%s", all)
	}
}

// TestUntrustedProxyLogged: with no trusted proxies (the default), a
// load balancer on a private address is the client of every request it
// forwards; its forwarding header, ignored, says it is a proxy, and the
// log says so. A private peer that forwards nothing writes no line.
func TestUntrustedProxyLogged(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	h := newFailureHarness(t, `
upstreams: {api: {url: "`+up.URL+`"}}
routes: [{name: api, path: /, upstream: api}]
rules: [{name: per-ip, key: [ip], limits: [1000/1m]}]
`)
	h.repeat(2, "GET", "/", "")
	if _, all := h.lines(""); strings.Contains(all, "client address") {
		t.Fatalf("a private peer that forwards nothing is logged:\n%s", all)
	}
	if got := h.repeat(3, "GET", "/", "198.51.100.7"); !cmp.Equal(got, map[int]int{200: 3}) {
		t.Fatalf("answers %v, want 3 × 200", got)
	}
	relay := "the client address is a private one that forwarded another's request: a proxy in front is likely missing from client_ip.trusted_proxies, and every client behind it shares its key"
	want := []map[string]any{{"level": "WARN", "msg": relay, "header": "X-Forwarded-For", "listener": "gateway", "count": 1.0, "interval": "10s"}}
	got, all := h.lines(relay)
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("lines (-got +want):\n%s\nlog:\n%s", diff, all)
	}
}
