package rules_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/storetest"
)

// compile loads rules from YAML (with one upstream added) and compiles them.
func compile(t *testing.T, rulesYAML string) *rules.Set {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte("upstreams: {api: {url: 'http://127.0.0.1:1'}}\nrules:\n"+rulesYAML), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	f.Config.ApplyDefaults()
	if ps := f.Validate(); len(ps) > 0 {
		t.Fatalf("Validate: %v", ps)
	}
	set, ps := rules.Compile(f)
	if len(ps) > 0 {
		t.Fatalf("Compile: %v", ps)
	}
	return set
}

// record is an Observer that keeps what it is told.
type record struct {
	seen []string // "rule:outcome"
	keys []string
	errs []error
}

func (r *record) ObserveCandidate(rule *rules.Rule, i int, o rules.Outcome) {
	r.seen = append(r.seen, rule.Name+"/"+rule.Candidates[i].String()+":"+o.String())
}

func (r *record) Charged(rule *rules.Rule, cost float64) {
	r.seen = append(r.seen, rule.Name+":charged")
}

func (r *record) Observe(_ *rules.Request, rule *rules.Rule, o rules.Outcome, key []byte, _ ratelimit.Decision, err error) {
	if err != nil {
		r.errs = append(r.errs, err)
		return
	}
	r.seen = append(r.seen, rule.Name+":"+o.String())
	if key != nil {
		r.keys = append(r.keys, string(key))
	}
}

type env struct {
	t     *testing.T
	eng   *rules.Engine
	clock *storetest.Clock
	obs   *record
}

func newEnv(t *testing.T, rulesYAML string) *env {
	c := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := &env{t: t, clock: c, obs: &record{}}
	e.eng = &rules.Engine{Set: compile(t, rulesYAML), Store: memory.New(memory.Options{Now: c.Now}), Obs: e.obs}
	return e
}

// eval evaluates one request from ip with optional header pairs.
func (e *env) eval(method, target, ip string, hdr ...string) rules.Verdict {
	e.t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	addr := netip.MustParseAddr(ip)
	bits := 32
	if addr.Is6() {
		bits = 64
	}
	req := &rules.Request{HTTP: r, Path: r.URL.Path, Route: "api", ClientIP: addr, ClientPrefix: netip.PrefixFrom(addr, bits).Masked()}
	return e.eng.Evaluate(context.Background(), req)
}

func name(v rules.Verdict) string {
	if v.Rule == nil {
		return "forward"
	}
	return v.Rule.Name
}

func TestEvaluationOrder(t *testing.T) {
	e := newEnv(t, `
  - {name: monitors, when: "request.user_agent == 'uptime-robot'", action: allow}
  - {name: shadow, action: count, limits: [2/1m]}
  - {name: no-bots, when: "request.user_agent.contains('BadBot')", action: deny}
  - {name: per-ip, limits: [3/1m]}
  - {name: after, action: count, limits: [100/1m]}
`)
	// allow stops evaluation: nothing after it counts.
	for range 10 {
		if v := e.eval("GET", "/", "192.0.2.1", "User-Agent", "uptime-robot"); v.Rule != nil {
			t.Fatalf("allow-listed monitor answered by %s", name(v))
		}
	}
	if got := strings.Join(e.obs.seen, " "); got != strings.Repeat("monitors:allowed ", 9)+"monitors:allowed" {
		t.Errorf("monitor requests seen by %q, want only the allow rule", got)
	}
	e.obs.seen = nil

	// deny answers without counting: per-ip is untouched afterwards.
	if v := e.eval("GET", "/", "192.0.2.2", "User-Agent", "BadBot/1"); name(v) != "no-bots" {
		t.Errorf("BadBot: answered by %s, want no-bots", name(v))
	}
	if got := strings.Join(e.obs.seen, " "); got != "shadow:allowed no-bots:denied" {
		t.Errorf("BadBot seen %q", got)
	}
	e.obs.seen = nil

	// block: 3 admitted, the 4th refused; count rules before it keep
	// counting (and report would_block past 2), rules after it stop seeing
	// refused requests.
	for i := range 3 {
		if v := e.eval("GET", "/", "192.0.2.2"); v.Rule != nil {
			t.Fatalf("request %d refused by %s", i+1, name(v))
		}
	}
	v := e.eval("GET", "/", "192.0.2.2")
	if name(v) != "per-ip" || v.Decision.Allowed || v.Decision.RetryAfter <= 0 {
		t.Errorf("request 4 = %s %+v, want per-ip refusal with RetryAfter", name(v), v.Decision)
	}
	want := "shadow:allowed per-ip:allowed after:allowed " + // 1
		"shadow:would_block per-ip:allowed after:allowed " + // 2 (shadow had BadBot's)
		"shadow:would_block per-ip:allowed after:allowed " + // 3
		"shadow:would_block per-ip:blocked" // 4: after never sees it
	if got := strings.Join(e.obs.seen, " "); got != want {
		t.Errorf("seen\n %q\nwant\n %q", got, want)
	}
}

func TestRefusedRequestsConsumeNoQuota(t *testing.T) {
	e := newEnv(t, `  - {name: r, limits: [2/1m]}`)
	e.eval("GET", "/", "192.0.2.1")
	e.eval("GET", "/", "192.0.2.1")
	var retry time.Duration
	for range 50 { // hammering while refused
		v := e.eval("GET", "/", "192.0.2.1")
		if v.Rule == nil {
			t.Fatal("admitted over the limit")
		}
		retry = v.Decision.RetryAfter
	}
	// Exactly when Retry-After says, one more fits: the 50 refusals did
	// not push it back.
	e.clock.Advance(retry)
	if v := e.eval("GET", "/", "192.0.2.1"); v.Rule != nil {
		t.Errorf("after Retry-After (%v): refused by %s %+v", retry, name(v), v.Decision)
	}
}

func TestMultipleLimitsAllOrNothing(t *testing.T) {
	e := newEnv(t, `  - {name: frontend, key: [header:X-Client], limits: [3/1s, 5/1h]}`)
	admitted := 0
	for range 4 {
		for range 3 {
			if v := e.eval("GET", "/", "192.0.2.1", "X-Client", "web"); v.Rule == nil {
				admitted++
			}
		}
		e.clock.Advance(time.Second)
	}
	if admitted != 5 {
		t.Errorf("admitted %d over 4 seconds, want 5 (the hourly limit)", admitted)
	}
	v := e.eval("GET", "/", "192.0.2.1", "X-Client", "web")
	if v.Rule == nil || v.Decision.Limit != 1 {
		t.Errorf("refusal names limit %d, want 1 (5/1h)", v.Decision.Limit)
	}
	// Another header value is another counter.
	if v := e.eval("GET", "/", "192.0.2.1", "X-Client", "app"); v.Rule != nil {
		t.Errorf("other client refused")
	}
}

func TestLogOnly(t *testing.T) {
	e := newEnv(t, `
  - {name: deny-all, when: "request.path == '/admin'", action: deny}
  - {name: r, limits: [1/1m]}
`)
	e.eng.LogOnly = new(atomic.Bool)
	e.eng.LogOnly.Store(true)
	for range 3 {
		if v := e.eval("GET", "/admin", "192.0.2.1"); v.Rule != nil {
			t.Fatalf("log-only answered with %s", name(v))
		}
	}
	want := "deny-all:would_block r:allowed deny-all:would_block r:would_block deny-all:would_block r:would_block"
	if got := strings.Join(e.obs.seen, " "); got != want {
		t.Errorf("seen %q, want %q", got, want)
	}
}

func TestKeys(t *testing.T) {
	e := newEnv(t, `
  - {name: ip, action: count, limits: [9/1m]}
  - {name: multi, action: count, key: [method, path, "query:page", "header:X-Api-Key"], limits: [9/1m]}
  - {name: expr, action: count, key: ["expr:request.path.size() > 3"], limits: [9/1m]}
  - {name: global, action: count, key: [], limits: [9/1m]}
`)
	e.eval("GET", "/abcd?page=2&page=3", "2001:db8:1:2:aaaa::1", "X-Api-Key", "k1")
	want := []string{
		"ip\x1fip\x1f2001:db8:1:2::/64",
		"multi\x1fmethod\x1epath\x1equery:page\x1eheader:X-Api-Key\x1fGET\x00/abcd\x002\x00k1",
		"expr\x1fexpr:request.path.size() > 3\x1ftrue",
		"global\x1f\x1f",
	}
	if len(e.obs.keys) != len(want) {
		t.Fatalf("keys %q", e.obs.keys)
	}
	for i := range want {
		if e.obs.keys[i] != want[i] {
			t.Errorf("key %d = %q, want %q", i, e.obs.keys[i], want[i])
		}
	}
	// Two hosts in one /64 share the ip counter; the rule's name keeps two
	// rules with the same key apart.
	e.obs.keys = nil
	e.eval("GET", "/", "2001:db8:1:2:bbbb::9")
	if e.obs.keys[0] != want[0] {
		t.Errorf("second host in the /64: key %q, want %q", e.obs.keys[0], want[0])
	}
}

func TestConditionErrorSkipsRule(t *testing.T) {
	e := newEnv(t, `  - {name: r, when: "request.headers['x-missing'] == 'a'", action: deny}`)
	if v := e.eval("GET", "/", "192.0.2.1"); v.Rule != nil {
		t.Errorf("a failing condition answered the request")
	}
	if len(e.obs.errs) != 1 {
		t.Errorf("errors observed: %v, want 1", e.obs.errs)
	}
}

// TestFailureKind: the Observer is told which part of a rule failed,
// whatever the rule's action: the condition (when, or count_when after the
// response) or the key.
func TestFailureKind(t *testing.T) {
	const missing = "request.headers['x-missing'] == 'a'"
	for _, tc := range []struct {
		name, rule string
		want       rules.FailureKind
	}{
		{"deny condition", `{name: r, action: deny, when: "` + missing + `"}`, rules.FailedCondition},
		{"block condition", `{name: r, when: "` + missing + `", limits: [10/1m]}`, rules.FailedCondition},
		{"count condition", `{name: r, action: count, when: "` + missing + `", limits: [10/1m]}`, rules.FailedCondition},
		{"block key", `{name: r, key: ["expr:request.headers['x-missing']"], limits: [10/1m]}`, rules.FailedKey},
		{"count key", `{name: r, action: count, key: ["expr:request.headers['x-missing']"], limits: [10/1m]}`, rules.FailedKey},
		{"block count_when", `{name: r, count_when: "response.headers['x-missing'] == 'a'", limits: [10/1m]}`, rules.FailedCondition},
	} {
		e := newEnv(t, "  - "+tc.rule)
		r := httptest.NewRequest("GET", "/", nil)
		req := &rules.Request{HTTP: r, Path: "/", ClientIP: netip.MustParseAddr("192.0.2.1")}
		if v := e.eng.Evaluate(context.Background(), req); v.Rule != nil {
			t.Errorf("%s: answered by %s, want the rule skipped", tc.name, name(v))
		}
		e.eng.Finish(context.Background(), req, rules.Response{Status: 200, Header: http.Header{}, Forwarded: true})
		if len(e.obs.errs) != 1 {
			t.Errorf("%s: errors observed %v, want 1", tc.name, e.obs.errs)
			continue
		}
		if got := rules.FailureKindOf(e.obs.errs[0]); got != tc.want {
			t.Errorf("%s: FailureKindOf(%v) = %v, want %v", tc.name, e.obs.errs[0], got, tc.want)
		}
	}
}

func TestOptionalFieldRead(t *testing.T) {
	// docs/rules.md's way to read a field that may be absent: no
	// evaluation error either way.
	e := newEnv(t, `  - {name: r, when: "request.headers[?'x-api-key'].orValue('') == 'bad'", action: deny}`)
	if v := e.eval("GET", "/", "192.0.2.1"); v.Rule != nil || len(e.obs.errs) != 0 {
		t.Errorf("without the field: rule %v, errors %v; want neither", v.Rule, e.obs.errs)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Api-Key", "bad")
	req := &rules.Request{HTTP: r, Path: "/", ClientIP: netip.MustParseAddr("192.0.2.1")}
	if v := e.eng.Evaluate(context.Background(), req); v.Rule == nil {
		t.Errorf("with the field: not matched (errors: %v)", e.obs.errs)
	}
}

func TestRequestModel(t *testing.T) {
	for _, tc := range []struct{ when string }{
		{"request.method == 'POST'"},
		{"request.method != 'post'"}, // upper case, whatever the client sent
		{"request.path == '/v1/images/'"},
		{"request.host == 'api.example.org'"},
		{"request.scheme == 'http'"},
		{"request.headers['x-token'] == 'a, b'"},
		{"request.query['q'] == 'cat'"},
		{"request.user_agent == 'curl/8'"},
		{"route.name == 'api'"},
		{"client.ip == '192.0.2.1'"},
		{"!client.internal && !session.present && !session.valid && api_client.id == ''"},
	} {
		t.Run(tc.when, func(t *testing.T) {
			e := newEnv(t, "  - {name: r, action: deny, when: \""+tc.when+"\"}")
			r := httptest.NewRequest("POST", "http://API.example.org:8080/v1/images/?q=cat&q=dog", nil)
			r.Header.Add("X-Token", "a")
			r.Header.Add("X-Token", "b")
			r.Header.Set("User-Agent", "curl/8")
			req := &rules.Request{HTTP: r, Path: "/v1/images/", Route: "api", ClientIP: netip.MustParseAddr("192.0.2.1")}
			if v := e.eng.Evaluate(context.Background(), req); v.Rule == nil {
				t.Errorf("condition %q is false, want true (errors: %v)", tc.when, e.obs.errs)
			}
		})
	}
}

func TestCompileProblems(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte(`
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: a, when: "request.path"}
  - {name: b, when: "request.nope == 1"}
  - {name: c, key: ["expr:request.headers"], limits: [1/1m]}
  - {name: d, when: "request.path.startsWith("}
  - {name: e, when: "request.path == '/login' && response.status == 401", limits: [5/10m]}
  - {name: f, key: ["expr:response.headers"], limits: [1/1m]}
  - {name: g, when: "request.method == POST", count_when: "response.status == '401'", limits: [1/1m]}
  - {name: h, when: "request.path == '/x' and request.method == 'GET'", key: ["expr:request.query['n'] > 5"], limits: [1/1m]}
  - {name: i, when: "request.method = 'POST'", key: ["expr:foo.bar"], limits: [1/1m]}
  - {name: j, when: "request.method == 'POST' && request.ip == '192.0.2.1'", key: ["expr:request.url"], limits: [1/1m]}
  - {name: k, when: "request.status == 401", key: ["expr:client.address"], limits: [1/1m]}
`), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	_, ps := rules.Compile(f)
	got := ps.Error()
	for _, want := range []string{
		"t.yaml:4: rules[0].when: CEL: expression has type string, want bool",
		"t.yaml:5: rules[1].when: CEL: at 1:8: undeclared reference",
		"t.yaml:6: rules[2].key[0]: CEL: key expression has type map(string, string)",
		"t.yaml:7: rules[3].when: CEL: at 1:",
		"t.yaml:8: rules[4].when: CEL: at 1:29: undeclared reference to 'response';" +
			" a request's conditions and keys are decided before it is forwarded: count on the response with count_when, such as count_when: \"response.status == 401\"",
		"t.yaml:9: rules[5].key[0]: CEL: at 1:9: undeclared reference to 'response.headers' (did you mean 'request.headers'?); a request's conditions",
		"t.yaml:10: rules[6].when: CEL: at 1:19: undeclared reference to 'POST'; to compare with the text POST, quote it: 'POST'",
		"t.yaml:10: rules[6].count_when: CEL: at 1:17: found no matching overload for '_==_' applied to '(int, string)'; a number never compares with a string: response.status is an int (401, not '401')",
		"t.yaml:11: rules[7].when: CEL: at 1:22: Syntax error: mismatched input 'and' expecting <EOF>; CEL writes and, or and not as &&, || and !",
		"t.yaml:11: rules[7].key[0]: CEL: at 1:20: found no matching overload for '_>_' applied to '(string, int)'; a number never compares with a string:",
		"; compare with ==",
		"t.yaml:12: rules[8].key[0]: CEL: at 1:1: undeclared reference to 'foo'\n",
		"t.yaml:13: rules[9].when: CEL: at 1:29: undeclared reference to 'request'; the request model calls it client.ip (docs/rules.md, The request model)",
		"t.yaml:13: rules[9].key[0]: CEL: at 1:8: undeclared reference to 'request.url'; the request model calls it request.path (the query is request.query)",
		"t.yaml:14: rules[10].when: CEL: at 1:8: undeclared reference to 'request.status'; the request model calls it response.status, in count_when",
		"t.yaml:14: rules[10].key[0]: CEL: at 1:1: undeclared reference to 'client'; the request model calls it client.ip",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}

// TestSharedConditions: rules with the same condition share one
// evaluation a request (Compile gives them one slot); the result must be
// what each rule would have found alone, whether the condition holds or
// not, and a different condition that differs only inside a string
// literal must not share it.
func TestSharedConditions(t *testing.T) {
	e := newEnv(t, `
  - {name: a, when: "request.path.startsWith('/csv')", action: count, limits: [100/1m]}
  - {name: b, when: "request.path.startsWith('/csv ')", action: count, limits: [100/1m]}
  - {name: c, when: "request.method != 'OPTIONS'", action: count, limits: [100/1m]}
  - {name: d, when: "request.path.startsWith('/csv')", action: count, limits: [100/1m]}
  - {name: e, when: "request.method != 'OPTIONS'", action: count, limits: [100/1m]}
  - {name: f, when: "  request.path.startsWith('/csv')  ", limits: [2/1m]}
`)
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/csv", "a:allowed c:allowed d:allowed e:allowed f:allowed"},
		{"OPTIONS", "/csv", "a:allowed d:allowed f:allowed"},
		{"GET", "/other", "c:allowed e:allowed"},
		{"OPTIONS", "/other", ""},
		{"GET", "/csv", "a:allowed c:allowed d:allowed e:allowed f:blocked"}, // f: third /csv
	} {
		e.obs.seen = nil
		e.eval(tc.method, tc.path, "192.0.2.1")
		if got := strings.Join(e.obs.seen, " "); got != tc.want {
			t.Errorf("%s %s: seen %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestMatchesCondition: matches() with a constant pattern (compiled once,
// evaluated without CEL's generic call) matches as before, and an error
// in its subject (a missing header) still makes the rule fail, not match.
func TestMatchesCondition(t *testing.T) {
	e := newEnv(t, `
  - {name: miss, when: "request.headers['x-missing'].matches('a')", action: deny}
  - {name: bots, when: "request.user_agent.matches('(?i)gptbot') && request.path.matches('/scores/?$')", action: deny}
`)
	for _, tc := range []struct{ ua, path, want string }{
		{"GPTBot/1.2", "/api/v1/score-sets/x/scores", "bots"},
		{"gptbot", "/scores/", "bots"},
		{"Firefox", "/scores", "forward"},
		{"GPTBot", "/scores/x", "forward"},
	} {
		e.obs.errs = nil
		if v := e.eval("GET", tc.path, "192.0.2.1", "User-Agent", tc.ua); name(v) != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.ua, tc.path, name(v), tc.want)
		}
		if len(e.obs.errs) != 1 {
			t.Errorf("%s %s: errors observed %v, want the missing header's", tc.ua, tc.path, e.obs.errs)
		}
	}
}

// TestCostLimitsFitTheStore: upstream_seconds are counted in
// milliseconds, so a budget the store cannot hold a thousand times over
// is refused at load (it used to fail every charge at run time, and the
// rule never counted).
func TestCostLimitsFitTheStore(t *testing.T) {
	f, err := config.Parse("t.yaml", []byte(`
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: fits, cost: upstream_seconds, limits: [4294967/1h]}
  - {name: over, cost: upstream_seconds, limits: [900/1m, 4294968/1h]}
  - {name: gcra, cost: upstream_seconds, algorithm: gcra, limits: [900000000/1h]}
  - {name: requests, limits: [4294967295/1h]}
  - {name: bytes, cost: response_bytes, limits: [4294967295/1h]}
`), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if ps := f.Validate(); len(ps) > 0 {
		t.Fatalf("Validate: %v", ps)
	}
	f.Config.ApplyDefaults()
	_, ps := rules.Compile(f)
	if len(ps) != 1 {
		t.Fatalf("problems %v, want one", ps)
	}
	want := "t.yaml:5: rules[1].limits[1]: 4294968 upstream-seconds is 4294968000 ms, more than a sliding_window limit can count (4294967295 ms a window); use a smaller budget or algorithm: gcra"
	if got := ps.Error(); got != want {
		t.Errorf("problem\n%s\nwant\n%s", got, want)
	}
}

// TestEvaluateForgetsSharedMatches: MaveDB's CSV path pattern is matched
// once a request for the two rules it guards; a Request evaluated again
// after its path changed (no Reset) is judged on the new path.
func TestEvaluateForgetsSharedMatches(t *testing.T) {
	e := exampleEngine(t, "../../examples/mavedb.yaml")
	req := exampleRequest("mavedb")
	req.HTTP.Header.Set("User-Agent", "Mozilla/5.0 (compatible; GPTBot/1.0)")
	for i, c := range []struct {
		path string
		deny bool
	}{
		{"/api/v1/score-sets/urn:mavedb:00000053-a-1/scores", true},
		{"/api/v1/score-sets/urn:mavedb:00000053-a-1", false},
		{"/api/v1/score-sets/urn:mavedb:00000053-a-1/counts/", true},
	} {
		req.Path = c.path
		v := e.Evaluate(context.Background(), req)
		if got := v.Rule != nil && v.Rule.Action == rules.Deny; got != c.deny {
			t.Errorf("evaluation %d, %s: denied %v, want %v", i, c.path, got, c.deny)
		}
	}
}

// TestJoinedSetsShareConditionsApart: two sets compiled apart
// number their shared conditions from 0 both; joined (as replay joins
// its --limit rules and the file's), ShareConditions numbers them again,
// so one set's condition result is never taken for the other's.
func TestJoinedSetsShareConditionsApart(t *testing.T) {
	a := compile(t, "  - {name: on-a, when: \"request.path.startsWith('/a')\", action: deny}\n")
	b := compile(t, "  - {name: on-b, when: \"request.path.startsWith('/b')\", action: deny}\n")
	joined := &rules.Set{Rules: append(append([]*rules.Rule{}, a.Rules...), b.Rules...)}
	joined.ShareConditions()
	e := &rules.Engine{Set: joined, Store: memory.New(memory.Options{})}
	for path, want := range map[string]string{"/a/1": "on-a", "/b/1": "on-b", "/c": "forward"} {
		r := httptest.NewRequest("GET", path, nil)
		v := e.Evaluate(context.Background(), &rules.Request{HTTP: r, Path: path, Route: "api"})
		if name(v) != want {
			t.Errorf("%s: %s, want %s", path, name(v), want)
		}
	}
}

// TestRuleReadsIdentity: a rule says whether its condition reads the
// request's session or API client, which a replay needs to know when its
// logs record neither.
func TestRuleReadsIdentity(t *testing.T) {
	set := compile(t, `
  - {name: no-session, when: "!session.valid && request.path.startsWith('/api/')", limits: [10/1m]}
  - {name: present, when: "session.present", limits: [10/1m]}
  - {name: free-plan, when: "api_client.plan == 'free'", limits: [10/1m]}
  - {name: path-only, when: "request.path == '/session.valid'", limits: [10/1m]}
  - {name: always, limits: [10/1m]}
`)
	want := map[string][2]bool{
		"no-session": {true, false}, "present": {true, false}, "free-plan": {false, true},
		"path-only": {false, false}, "always": {false, false},
	}
	for _, r := range set.Rules {
		if got := [2]bool{r.ReadsSession(), r.ReadsAPIClient()}; got != want[r.Name] {
			t.Errorf("rule %s: ReadsSession, ReadsAPIClient = %v, want %v", r.Name, got, want[r.Name])
		}
	}
}
