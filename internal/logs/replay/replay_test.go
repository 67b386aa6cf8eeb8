package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
)

const elastic = "../testdata/elastic_apache_logs.log.gz"

// elasticRequests reads the real Elastic log with the standard library
// only: client and time of every complete line (the truncated one left
// out, as the reader leaves it out).
func elasticRequests(t *testing.T) (clients []string, times []time.Time) {
	t.Helper()
	for _, line := range elasticLines(t) {
		if !strings.HasSuffix(line, `"`) {
			continue
		}
		at, err := time.Parse("02/Jan/2006:15:04:05 -0700", line[strings.IndexByte(line, '[')+1:strings.IndexByte(line, ']')])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		clients = append(clients, strings.Fields(line)[0])
		times = append(times, at)
	}
	return clients, times
}

// replayFiles replays files as `floodgate replay` does, in time order.
func replayFiles(t *testing.T, o Options, ro logs.ReadOptions, files ...string) *Result {
	t.Helper()
	r := New(o)
	read, err := r.ReadFiles(context.Background(), files, ro)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Result()
	c := logs.Total(read)
	res.Lines, res.Parsed, res.Unparsed, res.Files = c.Lines, c.Parsed, c.Unparsed, read
	return res
}

// TestFixedWindowArithmetic holds replay to exact arithmetic: with
// fixed_window, replay's would-blocks are exactly the sum over clients and
// aligned windows of max(0, count − limit), on the real Elastic log, read
// as one file and cut into files given in shuffled order (per-node files
// of the same minutes, and consecutive parts).
func TestFixedWindowArithmetic(t *testing.T) {
	lines := elasticLines(t)
	dir := t.TempDir()
	var nodes, parts []string
	for n := range 3 {
		var node []string
		for i := n; i < len(lines); i += 3 {
			node = append(node, lines[i])
		}
		nodes = append(nodes, writeLog(t, dir, fmt.Sprintf("node%d.log", n), node))
	}
	for i := 0; i < len(lines); i += 1500 {
		parts = append(parts, writeLog(t, dir, fmt.Sprintf("part%d.log.gz", i), lines[i:min(i+1500, len(lines))]))
	}
	shuffle := rand.New(rand.NewPCG(3, 4)).Shuffle
	shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	for _, tc := range []struct {
		name  string
		files []string
	}{
		{"one file", []string{elastic}},
		{"three nodes, shuffled", nodes},
		{"parts, shuffled", parts},
	} {
		t.Run(tc.name, func(t *testing.T) { checkArithmetic(t, tc.files) })
	}
}

func checkArithmetic(t *testing.T, files []string) {
	t.Helper()
	clients, times := elasticRequests(t)
	limits := []string{"5/1m", "20/1m", "40/5m", "100/1h", "300/1d"}
	set, err := AdHocRules(limits, "fixed_window")
	if err != nil {
		t.Fatal(err)
	}
	res := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, files...)
	if res.Order != (Order{}) {
		t.Errorf("order = %+v, want every request in time order", res.Order)
	}
	if res.Requests != int64(len(clients)) {
		t.Fatalf("requests %d, want %d", res.Requests, len(clients))
	}
	if res.Lines != 10000 || res.Parsed != 9999 || res.Unparsed != 1 {
		t.Fatalf("lines %d parsed %d unparsed %d; want 10000, 9999, 1", res.Lines, res.Parsed, res.Unparsed)
	}
	for i, s := range limits {
		l, _ := ratelimit.ParseLimit(s)
		counts := map[string]int64{} // client and aligned window
		for j, c := range clients {
			counts[fmt.Sprint(c, " ", times[j].UnixNano()/int64(l.Window))]++
		}
		var want int64
		over := map[string]bool{}
		for k, n := range counts {
			if n > l.Count {
				want += n - l.Count
				over[strings.Fields(k)[0]] = true
			}
		}
		got := res.Rules[i]
		if got.Name != AdHocName(l) || got.Limit != s || got.Algorithm != "fixed_window" {
			t.Errorf("rule %d = %s %s %s, want %s %s fixed_window", i, got.Name, got.Limit, got.Algorithm, AdHocName(l), s)
		}
		if got.Matched != int64(len(clients)) || got.WouldBlockRequests != want || got.WouldBlockClients != len(over) {
			t.Errorf("%s: matched %d, would block %d requests from %d clients; want %d, %d, %d",
				s, got.Matched, got.WouldBlockRequests, got.WouldBlockClients, len(clients), want, len(over))
		}
		var sum int64
		for _, h := range got.Timeline {
			sum += h.WouldBlockRequests
		}
		if sum != got.WouldBlockRequests {
			t.Errorf("%s: timeline adds up to %d, total %d", s, sum, got.WouldBlockRequests)
		}
	}
}

// compile compiles a configuration for replay.
func compile(t *testing.T, yaml string) (*rules.Set, *config.Config) {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if ps := f.Validate(); len(ps) > 0 {
		t.Fatal(ps)
	}
	set, ps := rules.Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	return set, &f.Config
}

// record makes a request record.
func record(client, method, target, ua string, at time.Time) *logs.Record {
	return &logs.Record{Client: []byte(client), Method: []byte(method), Target: []byte(target), UserAgent: []byte(ua),
		HasUserAgent: true, Time: at.UnixNano(), Status: 200, Bytes: 10}
}

var t0 = time.Date(2026, 9, 22, 10, 0, 0, 0, time.UTC)

const (
	browserUA = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
	botUA     = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
)

const mavedb = `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
routes: [{name: api, path: /api/, upstream: api}, {name: api-all, path: "/api/{rest...}", upstream: api}]
rules:
  - name: shadow-requests
    action: count
    limits: [3/1m]
    candidates: [5/1m]
  - name: block-ai-crawlers-on-csv
    when: "request.path.matches('/(scores|counts)/?$') && request.user_agent.matches('GPTBot')"
    action: deny
  - name: rate-limit-ip
    limits: [4/5m]
  - name: after
    action: count
    limits: [100/1m]
`

func TestModes(t *testing.T) {
	set, c := compile(t, mavedb)
	var recs []*logs.Record
	for i := range 6 { // a browser: 6 requests in one minute
		recs = append(recs, record("192.0.2.1", "GET", "/api/x", browserUA, t0.Add(time.Duration(i)*time.Second)))
	}
	for i := range 2 { // a crawler on a CSV endpoint
		recs = append(recs, record("192.0.2.9", "GET", "/api/score-sets/x/scores", botUA, t0.Add(time.Duration(i)*time.Second)))
	}
	recs = append(recs, record("192.0.2.3", "GET", "/elsewhere", browserUA, t0)) // no route
	recs = append(recs, record("192.0.2.3", "", "", browserUA, t0))              // not HTTP
	run := func(logOnly bool) *Result {
		r := New(Options{Rules: set, Routes: Routes(c), LogOnly: logOnly})
		for _, rec := range recs {
			r.Add(context.Background(), rec)
		}
		return r.Result()
	}
	type row struct {
		matched, wouldBlock int64
		clients, browsers   int
	}
	for _, tc := range []struct {
		logOnly bool
		want    map[string]row
	}{
		// Log-only: every rule sees everything it matches.
		{true, map[string]row{
			"shadow-requests":          {8, 3, 1, 1},
			"block-ai-crawlers-on-csv": {2, 2, 1, 0},
			"rate-limit-ip":            {8, 2, 1, 1},
			"after":                    {8, 0, 0, 0},
		}},
		// Enforce: denied and blocked requests stop there.
		{false, map[string]row{
			"shadow-requests":          {8, 3, 1, 1},
			"block-ai-crawlers-on-csv": {2, 2, 1, 0},
			"rate-limit-ip":            {6, 2, 1, 1},
			"after":                    {4, 0, 0, 0},
		}},
	} {
		res := run(tc.logOnly)
		if res.Unrouted != 2 || res.Requests != 10 {
			t.Errorf("log-only %v: unrouted %d of %d, want 2 of 10", tc.logOnly, res.Unrouted, res.Requests)
		}
		for _, r := range res.Rules {
			got := row{r.Matched, r.WouldBlockRequests, r.WouldBlockClients, r.WouldBlockBrowserClients}
			if got != tc.want[r.Name] {
				t.Errorf("log-only %v: %s = %+v, want %+v", tc.logOnly, r.Name, got, tc.want[r.Name])
			}
		}
		// The candidate 5/1m next to shadow-requests' 3/1m: the browser's
		// 6th request only.
		if cs := res.Rules[0].Candidates; len(cs) != 1 || cs[0].Limit != "5/1m" || cs[0].WouldBlockRequests != 1 || cs[0].WouldBlockBrowserClients != 1 {
			t.Errorf("log-only %v: candidates = %+v", tc.logOnly, cs)
		}
	}
}

// TestNonIPClients: clients given by host name or hash each have their own
// counter under an "ip" key, and conditions see no client.ip.
func TestNonIPClients(t *testing.T) {
	set, _ := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: per-client, action: count, limits: [2/1m]}
  - {name: sees-ip, action: count, when: "client.ip != ''", limits: [1000/1m]}
`)
	r := New(Options{Rules: set})
	for _, c := range []string{"a.example.net", "b.example.net", "3f2a9c0d1e4b5a6f"} {
		for i := range 3 {
			r.Add(context.Background(), record(c, "GET", "/", browserUA, t0.Add(time.Duration(i)*time.Second)))
		}
	}
	res := r.Result()
	if got := res.Rules[0]; got.WouldBlockRequests != 3 || got.WouldBlockClients != 3 {
		t.Errorf("per-client: %d would-blocks from %d clients, want 3 from 3 (one each)", got.WouldBlockRequests, got.WouldBlockClients)
	}
	if got := res.Rules[1].Matched; got != 0 {
		t.Errorf("sees-ip matched %d, want 0: host names have no client.ip", got)
	}
}

// TestRequestModel: the path is decoded and cleaned as the gateway does,
// the query, host and User-Agent reach the conditions.
func TestRequestModel(t *testing.T) {
	set, _ := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: path, action: count, when: "request.path == '/a b/c/'", limits: [1000/1m]}
  - {name: query, action: count, when: "'page' in request.query && request.query['page'] == '2'", limits: [1000/1m]}
  - {name: host, action: count, when: "request.host == 'api.example.com'", limits: [1000/1m]}
  - {name: ua, action: count, when: "request.user_agent.contains('Firefox')", limits: [1000/1m]}
  - {name: method, action: count, when: "request.method == 'POST'", limits: [1000/1m]}
`)
	r := New(Options{Rules: set})
	rec := record("192.0.2.1", "POST", "/a%20b//x/../c/?page=2", browserUA, t0)
	rec.Host = []byte("api.example.com")
	r.Add(context.Background(), rec)
	for _, rule := range r.Result().Rules {
		if rule.Matched != 1 {
			t.Errorf("rule %s matched %d, want 1", rule.Name, rule.Matched)
		}
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"": "/", "a": "/a", "/": "/", "//a///b": "/a/b", "/a/./b/../c/": "/a/c/", "/..": "/", "/.well-known/x": "/.well-known/x",
	} {
		if got := CleanPath(in); got != want {
			t.Errorf("CleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAdHocRules(t *testing.T) {
	set, err := AdHocRules([]string{"100/5m", "60/1m"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Rules) != 2 || set.Rules[0].Name != "limit-100-per-5m" || set.Rules[1].Name != "limit-60-per-1m" ||
		set.Rules[0].Action != rules.Count || set.Rules[0].Limits[0].Algorithm != ratelimit.SlidingWindow {
		t.Errorf("rules = %+v", set.Rules)
	}
	for _, bad := range [][]string{{"100"}, {"0/1m"}, {"100/5m", "100/5m"}, {"1/1x"}} {
		if _, err := AdHocRules(bad, ""); err == nil {
			t.Errorf("AdHocRules(%q) succeeded", bad)
		}
	}
	if _, err := AdHocRules([]string{"1/1m"}, "leaky"); err == nil {
		t.Error("unknown algorithm accepted")
	}
	a, _ := AdHocRules([]string{"1/1m"}, "")
	if _, err := Merge(a, a); err == nil {
		t.Error("Merge of two rules with one name succeeded")
	}
}

// TestResultShape checks the JSON field names, which are interface: scripts read them.
func TestResultShape(t *testing.T) {
	set, _ := AdHocRules([]string{"100/5m"}, "")
	res := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, "../testdata/elastic_excerpt.log")
	data, _ := json.Marshal(res)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"lines", "parsed", "unparsed", "rules"} {
		if _, ok := v[k]; !ok {
			t.Errorf("result lacks %q", k)
		}
	}
	rule := v["rules"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "limit", "matched", "would_block_requests", "would_block_clients", "would_block_browser_clients", "timeline"} {
		if _, ok := rule[k]; !ok {
			t.Errorf("rules[0] lacks %q", k)
		}
	}
	if rule["limit"] != "100/5m" {
		t.Errorf("limit = %v, want 100/5m", rule["limit"])
	}
	// The busiest client, 108 requests in one minute, is over 100/5m.
	if rule["would_block_requests"].(float64) != 8 {
		t.Errorf("would_block_requests = %v, want 8", rule["would_block_requests"])
	}
}

func BenchmarkReplay(b *testing.B) {
	set, _ := AdHocRules([]string{"100/5m", "20/1m"}, "")
	r := New(Options{Rules: set, LogOnly: true})
	recs := make([]*logs.Record, 100)
	for i := range recs {
		recs[i] = record(fmt.Sprintf("192.0.2.%d", i), "GET", "/api/x?y=1", browserUA, t0)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec := recs[i%len(recs)]
		rec.Time = t0.Add(time.Duration(i) * time.Millisecond).UnixNano()
		r.Add(ctx, rec)
		i++
	}
}

// TestRefusedInTheLog: a request the log says was refused (floodgate's
// blocked_by) got floodgate's own answer, not the upstream's: replayed
// count_when and cost rules charge it nothing, in either mode, as the
// gateway charges nothing for its own answers.
func TestRefusedInTheLog(t *testing.T) {
	set, c := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: per-ip, limits: [2/1h]}
  - {name: errors, action: count, count_when: "response.status >= 400", limits: [3/1h]}
  - {name: upstream-time, action: count, cost: upstream_seconds, limits: [3600/1h]}
`)
	var lines []string
	for i := range 10 {
		status, blocked := 200, ""
		if i >= 2 {
			status, blocked = 429, `,"blocked_by":"per-ip"`
		}
		lines = append(lines, fmt.Sprintf(`{"time":"2026-09-22T10:00:%02d.5Z","msg":"access","method":"GET","path":"/","status":%d,"route":"api","duration_ms":1000,"ua":"curl/8.0","ua_class":"script","client":"3f2a9c0d1e4b5a6f","bytes":10%s}`, i, status, blocked))
	}
	file := writeLog(t, t.TempDir(), "access.log", lines)
	for _, logOnly := range []bool{true, false} {
		res := replayFiles(t, Options{Rules: set, Routes: Routes(c), LogOnly: logOnly}, logs.ReadOptions{}, file)
		if res.Requests != 10 {
			t.Fatalf("log-only %v: requests %d, want 10", logOnly, res.Requests)
		}
		if got := res.Rules[0].WouldBlockRequests; got != 8 {
			t.Errorf("log-only %v: per-ip would block %d, want 8", logOnly, got)
		}
		if got := res.Rules[1].WouldBlockRequests; got != 0 {
			t.Errorf("log-only %v: errors would block %d, want 0: the 429s were floodgate's own", logOnly, got)
		}
		if got := res.Rules[2].Charged; got != 2 {
			t.Errorf("log-only %v: upstream-time charged %v, want 2 (the two forwarded requests)", logOnly, got)
		}
	}
}

// TestGatewayPaths: floodgate's access log records the path the rules saw,
// already decoded and cleaned, without the query: replay takes it as it
// is, neither decoding it again nor reading a decoded "?" as the start of
// a query.
func TestGatewayPaths(t *testing.T) {
	set, c := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
routes: [{name: api, path: /, upstream: api}]
rules:
  - {name: csv, when: "request.path.matches('/scores$')", limits: [1/1h]}
  - {name: literal, action: count, when: "request.path == '/100%25' && request.query.size() == 0", limits: [1000/1h]}
`)
	var lines []string
	for i, p := range []string{"/a?/scores", "/a?/scores", "/a%2Fscores", "/a%2Fscores", "/a%2Fscores", "/a%2Fscores", "/100%25"} {
		lines = append(lines, fmt.Sprintf(`{"time":"2026-09-22T10:00:%02dZ","msg":"access","method":"GET","path":%q,"status":200,"route":"api","duration_ms":1,"ua":"curl/8.0","ua_class":"script","client":"3f2a9c0d1e4b5a6f","bytes":10}`, i, p))
	}
	file := writeLog(t, t.TempDir(), "access.log", lines)
	res := replayFiles(t, Options{Rules: set, Routes: Routes(c)}, logs.ReadOptions{}, file)
	if got := res.Rules[0]; got.Matched != 2 || got.WouldBlockRequests != 1 {
		t.Errorf("csv matched %d, would block %d; want 2, 1 (the paths ending in /scores as the gateway saw them)", got.Matched, got.WouldBlockRequests)
	}
	if got := res.Rules[1].Matched; got != 1 {
		t.Errorf("literal matched %d, want 1", got)
	}
}

// TestLoadBalancerAnswers: a request the load balancer answered itself
// (ALB: no target status) never reached the upstream, as a request the
// gateway answers itself: count_when and cost rules charge it nothing.
func TestLoadBalancerAnswers(t *testing.T) {
	set, _ := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: bytes, action: count, key: [], cost: response_bytes, limits: [1000000/1h]}
  - {name: error-bytes, action: count, key: [], cost: response_bytes, count_when: "response.status >= 500", limits: [1000000/1h]}
`)
	// AWS's examples: six requests a target answered (366, 57, 257, 587,
	// 786 and 366 bytes sent), and a 502 of the load balancer's own.
	res := replayFiles(t, Options{Rules: set}, logs.ReadOptions{}, "../testdata/alb.log")
	if res.Requests != 7 {
		t.Fatalf("requests %d, want 7", res.Requests)
	}
	if got := res.Rules[0].Charged; got != 2419 {
		t.Errorf("bytes charged %v, want 2419 (the targets' answers)", got)
	}
	if got := res.Rules[1].Charged; got != 0 {
		t.Errorf("error-bytes charged %v, want 0: the 502 is the load balancer's own", got)
	}
}

// TestListeners: what floodgate's access log says of the listener that
// took a request is replayed as the gateway treats it. The internal
// listener's requests meet no rule, unless internal.evaluate_rules, and
// then with client.internal; the decision listener's meet no rule that
// needs the response, and their status is the decision's, not the
// upstream's.
func TestListeners(t *testing.T) {
	set, c := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
routes: [{name: api, path: /, upstream: api}]
rules:
  - {name: per-ip, action: count, limits: [2/1h]}
  - {name: internal, action: count, when: "client.internal", limits: [1000/1h]}
  - {name: errors, action: count, key: [], count_when: "response.status >= 200", cost: response_bytes, limits: [1000000/1h]}
`)
	access := func(i int, listener string) string {
		return fmt.Sprintf(`{"time":"2026-09-22T10:00:%02dZ","msg":"access","method":"GET","path":"/","status":200,"route":"api","duration_ms":1,"ua":"curl/8.0","ua_class":"script","client":"3f2a9c0d1e4b5a6f","bytes":10%s}`, i, listener)
	}
	var lines []string
	for i := range 3 {
		lines = append(lines, access(i, `,"listener":"internal"`))
	}
	for i := range 2 {
		lines = append(lines, access(10+i, `,"listener":"decide"`))
	}
	lines = append(lines, access(20, ""))
	file := writeLog(t, t.TempDir(), "access.log", lines)
	for _, tc := range []struct {
		internalRules               bool
		perIP, internal, wouldBlock int64
		errorsMatched               int64
		charged                     float64
	}{
		{false, 3, 0, 1, 1, 10},
		{true, 6, 3, 4, 4, 40},
	} {
		res := replayFiles(t, Options{Rules: set, Routes: Routes(c), InternalRules: tc.internalRules}, logs.ReadOptions{}, file)
		got := []int64{res.Rules[0].Matched, res.Rules[1].Matched, res.Rules[0].WouldBlockRequests, res.Rules[2].Matched}
		want := []int64{tc.perIP, tc.internal, tc.wouldBlock, tc.errorsMatched}
		if !slices.Equal(got, want) || res.Rules[2].Charged != tc.charged {
			t.Errorf("internal rules %v: per-ip matched, internal matched, per-ip would block, errors matched = %v, errors charged %v; want %v, %v",
				tc.internalRules, got, res.Rules[2].Charged, want, tc.charged)
		}
	}
}

// TestSameReportTwice: the same log and rules give byte-identical
// reports, also when the store's key cap is too small for the traffic
// and it evicts counters: which counters it evicts is decided by the
// records alone, not by a seed drawn per run or the number of cores.
func TestSameReportTwice(t *testing.T) {
	set, err := AdHocRules([]string{"5/1m", "20/5m", "30/1h", "50/1d"}, "")
	if err != nil {
		t.Fatal(err)
	}
	var reports [][]byte
	for range 3 {
		res := replayFiles(t, Options{Rules: set, LogOnly: true, MaxKeys: 256}, logs.ReadOptions{}, elastic)
		if res.StoreEvictions == 0 {
			t.Fatalf("no eviction with MaxKeys 256: the test needs some")
		}
		data, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, data)
	}
	for i, r := range reports[1:] {
		if !bytes.Equal(r, reports[0]) {
			t.Errorf("report %d differs from the first (-got +first):\n%s", i+2, cmp.Diff(string(r), string(reports[0])))
		}
	}
}

const identities = `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
api_clients:
  plans: {standard: [1/1h], exempt: []}
  clients: [{id: lab, plan: standard}, {id: partner, plan: exempt}]
rules:
  - {name: per-session, key: [session], limits: [2/1h]}
  - {name: without-session, action: count, when: "!session.valid", limits: [100/1h]}
  - {name: per-client, key: [api_client], limits_from: plan}
  - {name: per-ip, limits: [100/1h]}
`

// TestIdentities: a request that records a session (floodgate's access
// log: the gateway's hash of it) or an API client is replayed with it, so
// rules keyed by them count it as the gateway did; the client's plan is
// the configuration's. Without any such request in the log, those rules
// are reported as not replayed, with the reason, the others replayed.
func TestIdentities(t *testing.T) {
	set, c := compile(t, identities)
	plans := map[string]string{}
	for _, cl := range c.APIClients.Clients {
		plans[cl.ID] = cl.Plan
	}
	with := func(session, client string) *logs.Record {
		rec := record("192.0.2.1", "GET", "/", browserUA, t0)
		rec.Session, rec.APIClient = []byte(session), []byte(client)
		return rec
	}
	r := New(Options{Rules: set, LogOnly: true, Plans: plans})
	for _, rec := range []*logs.Record{
		with("aaaa", ""), with("aaaa", ""), with("aaaa", ""), with("bbbb", ""), // one session over 2/1h
		with("", "lab"), with("", "lab"), with("", "partner"), with("", "partner"), // lab over its plan's 1/1h
		with("", ""),
	} {
		r.Add(context.Background(), rec)
	}
	type row struct {
		matched, wouldBlock int64
		notReplayed         string
	}
	got := map[string]row{}
	for _, rule := range r.Result().Rules {
		got[rule.Name] = row{rule.Matched, rule.WouldBlockRequests, rule.NotReplayed}
	}
	want := map[string]row{
		"per-session":         {4, 1, ""},
		"without-session":     {5, 0, ""},
		"per-client.standard": {2, 1, ""},
		"per-ip":              {9, 0, ""},
	}
	if diff := cmp.Diff(got, want, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("rules (-got +want):\n%s", diff)
	}

	// A log that records neither.
	r = New(Options{Rules: set, LogOnly: true, Plans: plans})
	r.Add(context.Background(), with("", ""))
	res := r.Result()
	got = map[string]row{}
	for _, rule := range res.Rules {
		got[rule.Name] = row{rule.Matched, rule.WouldBlockRequests, rule.NotReplayed}
	}
	want = map[string]row{
		"per-session":         {0, 0, NoSessions},
		"without-session":     {1, 0, ""},
		"per-client.standard": {0, 0, NoAPIClients},
		"per-ip":              {1, 0, ""},
	}
	if diff := cmp.Diff(got, want, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("a log without sessions or API clients: rules (-got +want):\n%s", diff)
	}
	if !res.Replayed() {
		t.Error("Replayed() = false, want true: per-ip was")
	}
}

// TestDenyIsNotALimit: a deny rule (floodgate's WAF-style block: a
// condition, no limit) is reported as the gateway counts it: each request
// it matches is refused (a would-block in log-only mode), under its own
// action, with no limit, no algorithm and no window of its own, and it
// takes nothing from any counter: a limit rule after it counts the
// requests it refused only in log-only mode, where the gateway forwards
// them.
func TestDenyIsNotALimit(t *testing.T) {
	set, c := compile(t, `
upstreams: {api: {url: 'http://127.0.0.1:1'}}
rules:
  - {name: no-bots, when: "request.user_agent.matches('GPTBot')", action: deny}
  - {name: per-ip, limits: [2/1m]}
`)
	for _, logOnly := range []bool{true, false} {
		r := New(Options{Rules: set, Routes: Routes(c), LogOnly: logOnly})
		for i := range 3 {
			r.Add(context.Background(), record("192.0.2.9", "GET", "/", botUA, t0.Add(time.Duration(i)*time.Second)))
		}
		res := r.Result()
		deny, limit := res.Rules[0], res.Rules[1]
		if deny.Action != "deny" || deny.Limit != "" || deny.Algorithm != "" || deny.Matched != 3 || deny.WouldBlockRequests != 3 {
			t.Errorf("log-only %v: no-bots = %+v, want action deny, no limit, 3 matched and refused", logOnly, deny)
		}
		wantMatched, wantBlocked := int64(0), int64(0)
		if logOnly {
			wantMatched, wantBlocked = 3, 1
		}
		if limit.Matched != wantMatched || limit.WouldBlockRequests != wantBlocked {
			t.Errorf("log-only %v: per-ip matched %d, refused %d; want %d, %d", logOnly, limit.Matched, limit.WouldBlockRequests, wantMatched, wantBlocked)
		}
		if len(res.Windows) != 1 || res.Windows[0].Window != "1m" {
			t.Errorf("log-only %v: windows %+v, want per-ip's 1m only", logOnly, res.Windows)
		}
	}
}

// TestRouteCredentialsAPIClient: a route whose upstream has floodgate's
// own credentials with auth.api_client counts every request as that API
// client, as the gateway identifies it (by the route before any bearer
// token), whatever the log records: a load balancer's log records none,
// and an access log written under another configuration another or none.
func TestRouteCredentialsAPIClient(t *testing.T) {
	set, c := compile(t, `
upstreams:
  api: {url: 'http://127.0.0.1:1', auth: {type: header, header_value: 'Bearer k', api_client: frontend}}
  other: {url: 'http://127.0.0.1:2'}
api_clients:
  plans: {standard: [2/1h], exempt: []}
  clients: [{id: frontend, plan: standard}, {id: lab, plan: exempt}]
routes: [{name: api, path: "/api/{rest...}", upstream: api}, {name: other, path: "/{rest...}", upstream: other}]
rules:
  - {name: per-client, key: [api_client], limits_from: plan}
`)
	o := Options{Rules: set, Routes: Routes(c), LogOnly: true, Plans: map[string]string{"frontend": "standard", "lab": "exempt"},
		RouteAPIClients: RouteAPIClients(c)}
	r := New(o)
	for i := range 4 { // from two addresses: one API client to the gateway
		rec := record("192.0.2."+strconv.Itoa(1+i%2), "GET", "/api/x", browserUA, t0.Add(time.Duration(i)*time.Second))
		if i == 3 {
			rec.APIClient = []byte("lab") // recorded under another configuration: the route decides
		}
		r.Add(context.Background(), rec)
	}
	r.Add(context.Background(), record("192.0.2.1", "GET", "/elsewhere", browserUA, t0)) // no API client
	var got *Rule
	for i := range r.Result().Rules {
		if rule := &r.Result().Rules[i]; rule.Name == "per-client.standard" {
			got = rule
		}
	}
	if got == nil {
		t.Fatal("no per-client.standard rule in the result")
	}
	if got.NotReplayed != "" || got.Matched != 4 || got.WouldBlockRequests != 2 {
		t.Errorf("per-client.standard: matched %d, would-block %d, not replayed %q; want 4, 2 (the route's client over its plan's 2/1h) and replayed",
			got.Matched, got.WouldBlockRequests, got.NotReplayed)
	}
}
