package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
)

// read reads the lines of the fixture that keep accepts and gives each
// record to every add.
func read(t *testing.T, keep func(line string) bool, add ...func(*logs.Record)) {
	t.Helper()
	data, err := os.ReadFile("../testdata/floodgate.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if keep(l) {
			in.WriteString(l)
		}
	}
	rd, err := logs.NewReader(&in, logs.Floodgate)
	if err != nil {
		t.Fatal(err)
	}
	for rd.Next() {
		for _, f := range add {
			f(rd.Record())
		}
	}
}

// key hashes clients in tests.
var key = baseline.Namer{Key: []byte("test")}

func all(string) bool             { return true }
func decisionsOnly(l string) bool { return strings.Contains(l, `"msg":"decision"`) }

// The fixture (testdata/floodgate.jsonl, see logs.TestFloodgateFixture):
// a browser sends 8 requests in a minute (shadow-requests 3/1m would
// block the 4th to 8th, rate-limit-ip 5/1m blocks the 6th to 8th), a
// script 2, a crawler 4 (shadow would block its 4th).

func TestLimitedClients(t *testing.T) {
	q := NewLimitedClients()
	read(t, all, q.Add)
	r := q.Result(-1, key)
	if r.Requests != 14 || r.Decisions != 28 || len(r.Notes) != 0 {
		t.Errorf("summary = %+v", r.Summary)
	}
	type row struct {
		class                         string
		requests, blocked, wouldBlock int64
		rules                         string
	}
	var got []row
	for _, c := range r.Clients {
		got = append(got, row{c.Class, c.Requests, c.Blocked, c.WouldBlock, strings.Join(c.Rules, ",")})
		if len(c.Client) != 16 {
			t.Errorf("client %q is not a hash", c.Client)
		}
	}
	want := []row{
		{"browser", 8, 3, 2, "rate-limit-ip,shadow-requests"},
		{"crawler", 4, 0, 1, "shadow-requests"},
	}
	if diff := cmp.Diff(got, want, cmp.AllowUnexported(row{})); diff != "" {
		t.Errorf("clients (-got +want):\n%s", diff)
	}
	if r.Clients[0].First != "2026-11-30T10:00:04Z" || r.Clients[0].Last != "2026-11-30T10:00:08Z" {
		t.Errorf("browser limited from %s to %s, want 10:00:04 to 10:00:08", r.Clients[0].First, r.Clients[0].Last)
	}

	// The decision log alone: one client per rule key.
	q = NewLimitedClients()
	read(t, decisionsOnly, q.Add)
	r = q.Result(1, key)
	if len(r.Notes) != 1 || len(r.Clients) != 1 || r.Clients[0].Rules[0] != "shadow-requests" || r.Clients[0].WouldBlock != 5 {
		t.Errorf("decision log: %+v", r)
	}
}

func TestBrowsersCaught(t *testing.T) {
	q := NewBrowsersCaught()
	read(t, all, q.Add)
	r := q.Result()
	if r.BrowserRequests == nil || *r.BrowserRequests != 8 || len(r.Rules) != 2 {
		t.Fatalf("result = %+v", r)
	}
	// shadow-requests caught 5 browser requests (would block), and
	// rate-limit-ip 3 (blocked).
	for i, want := range []CaughtRule{
		{Rule: "shadow-requests", Requests: 5, WouldBlock: 5, Clients: 1},
		{Rule: "rate-limit-ip", Requests: 3, Blocked: 3, Clients: 1},
	} {
		got := r.Rules[i]
		if got.Rule != want.Rule || got.Requests != want.Requests || got.Blocked != want.Blocked ||
			got.WouldBlock != want.WouldBlock || got.Clients != want.Clients {
			t.Errorf("rules[%d] = %+v, want %+v", i, got, want)
		}
		if len(got.TopPaths) != 1 || got.TopPaths[0].Requests != want.Requests {
			t.Errorf("rules[%d].top_paths = %+v", i, got.TopPaths)
		}
	}
	// The decision log alone gives the same numbers per rule (its
	// records carry ua_class), with a note.
	q = NewBrowsersCaught()
	read(t, decisionsOnly, q.Add)
	r = q.Result()
	if len(r.Notes) != 1 || len(r.Rules) != 2 || r.Rules[0].Rule != "shadow-requests" || r.Rules[0].WouldBlock != 5 ||
		r.Rules[1].Blocked != 3 || r.Rules[1].Clients != 1 {
		t.Errorf("decision log alone: %+v", r)
	}
	// It does not record every browser request: their number is not
	// known, which is not zero.
	if r.BrowserRequests != nil {
		t.Errorf("decision log alone: browser requests = %d, want not known (nil)", *r.BrowserRequests)
	}
}

func TestPeakRate(t *testing.T) {
	q := NewPeakRate([]time.Duration{time.Minute})
	read(t, all, q.Add)
	r := q.Result(2, baseline.Namer{})
	if r.Clients != 3 || r.Windows[0].PeakMax != 8 || len(r.TopClients) != 2 || r.TopClients[0].Peaks["1m"] != 8 || r.TopClients[0].Class != "browser" {
		t.Errorf("peak-rate = %+v", r)
	}
	q = NewPeakRate(nil)
	read(t, decisionsOnly, q.Add)
	r = q.Result(-1, baseline.Namer{})
	// 2 rules × 3 clients, each rule key with the client's requests.
	if len(r.Notes) != 1 || r.Clients != 6 || r.Windows[0].PeakMax != 8 {
		t.Errorf("peak-rate from decisions = %+v", r)
	}
	// The keys have their requests' class, from the records' ua_class:
	// each rule's key of the browser, of the script and of the crawler.
	classes := map[string]int{}
	for c, p := range r.Windows[0].ByClass {
		classes[c] = p.Clients
	}
	if want := map[string]int{"browser": 2, "script": 2, "crawler": 2}; !cmp.Equal(classes, want) {
		t.Errorf("peak-rate from decisions: clients by class %v, want %v", classes, want)
	}
	if len(r.TopClients) == 0 || r.TopClients[0].Class != "browser" || r.TopClients[0].Peaks["1m"] != 8 {
		t.Errorf("peak-rate from decisions: top clients %+v, want a browser's key first, peak 8", r.TopClients)
	}
}

// TestOtherFormats: a 429 in a combined log counts as limited by an
// unnamed rule.
func TestOtherFormats(t *testing.T) {
	line := `192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 429 0 "-" "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"` + "\n"
	rd, _ := logs.NewReader(strings.NewReader(line+line), logs.Auto)
	lc, bc := NewLimitedClients(), NewBrowsersCaught()
	for rd.Next() {
		lc.Add(rd.Record())
		bc.Add(rd.Record())
	}
	if r := lc.Result(-1, key); len(r.Clients) != 1 || r.Clients[0].Blocked != 2 || r.Clients[0].Rules[0] != Status429 {
		t.Errorf("limited-clients = %+v", r.Clients)
	}
	if r := bc.Result(); len(r.Rules) != 1 || r.Rules[0].Rule != Status429 || r.Rules[0].Requests != 2 {
		t.Errorf("browsers-caught = %+v", r.Rules)
	}
}

// TestLimitedClientsHashed: limited-clients shows a client address as a
// keyed hash, as every report does, unless told to show clients as
// logged; clients floodgate's logs give hashed are shown as they are.
func TestLimitedClientsHashed(t *testing.T) {
	const ua = `Mozilla/5.0 (X11; Linux) Firefox/120`
	for _, tc := range []struct {
		name, line, client string
		format             logs.Format
	}{
		{"combined, 429", `198.51.100.7 - - [10/Oct/2026:13:55:37 +0000] "GET /a HTTP/1.1" 429 12 "-" "` + ua + `"`, "198.51.100.7", logs.Combined},
		{"common, 429", `2001:db8::7 - - [10/Oct/2026:13:55:37 +0000] "GET /a HTTP/1.1" 429 12`, "2001:db8::7", logs.Common},
		{"host name, 429", `crawler-7.example.net - - [10/Oct/2026:13:55:37 +0000] "GET /a HTTP/1.1" 429 12`, "crawler-7.example.net", logs.Common},
		{"alb, 429", `http 2026-10-10T13:55:37.186641Z app/lb/1 198.51.100.7:2817 10.0.0.1:80 0.000 0.001 0.000 429 429 34 366 "GET http://www.example.com:80/a HTTP/1.1" "` + ua + `" - - arn:x "Root=1" "-" "-" 0 2026-10-10T13:55:37.000000Z "forward" "-" "-" "10.0.0.1:80" "429" "-" "-"`, "198.51.100.7", logs.ALB},
		{"waf, rate-based block", `{"timestamp":1791726937000,"action":"BLOCK","terminatingRuleId":"per-ip","terminatingRuleType":"RATE_BASED","httpRequest":{"clientIp":"198.51.100.7","uri":"/a","httpMethod":"GET","headers":[{"name":"User-Agent","value":"` + ua + `"}]}}`, "198.51.100.7", logs.WAF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, show := range []bool{false, true} {
				rd, err := logs.NewReader(strings.NewReader(tc.line+"\n"), tc.format)
				if err != nil {
					t.Fatal(err)
				}
				q := NewLimitedClients()
				for rd.Next() {
					q.Add(rd.Record())
				}
				namer := baseline.Namer{Key: []byte("test"), Show: show}
				r := q.Result(-1, namer)
				if len(r.Clients) != 1 {
					t.Fatalf("clients = %+v, want one", r.Clients)
				}
				want := namer.Name(tc.client, false)
				if show != (want == tc.client) {
					t.Fatalf("Namer.Name(%q) = %q", tc.client, want)
				}
				if got := r.Clients[0].Client; got != want {
					t.Errorf("show %v: client = %q, want %q", show, got, want)
				}
			}
		})
	}
	// floodgate's access log: the gateway's hashes, as they are.
	q := NewLimitedClients()
	read(t, all, q.Add)
	for _, c := range q.Result(-1, key).Clients {
		if _, ok := q.clients[c.Client]; !ok {
			t.Errorf("client %q is not one of the log's", c.Client)
		}
	}
}

// TestWho429: a 429 counts as floodgate's refusal in floodgate's access
// log only when blocked_by names the rule (a 429 without it is the
// upstream's, forwarded); in logs that do not say who refused, as the
// unnamed rule (429).
func TestWho429(t *testing.T) {
	const ua = `Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0`
	access := func(extra string) string {
		return `{"time":"2026-12-02T14:19:17.875Z","msg":"access","method":"GET","path":"/x","status":429,"route":"default","duration_ms":1.665,"ua":"` + ua + `","ua_class":"browser","client":"3d460942d0aee600","bytes":2` + extra + `}`
	}
	for _, tc := range []struct {
		name, line string
		format     logs.Format
		rule       string // "": not limited
		blocked    bool
	}{
		{"floodgate, the upstream's 429", access(""), logs.Floodgate, "", false},
		{"floodgate, blocked by a rule", access(`,"blocked_by":"per-ip"`), logs.Floodgate, "per-ip", true},
		{"floodgate, the upstream's 429 and a would-block", access(`,"would_block":["shadow"]`), logs.Floodgate, "shadow", false},
		{"combined", `192.0.2.7 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 429 0 "-" "` + ua + `"`, logs.Combined, Status429, true},
		{"alb", `http 2026-10-10T13:55:37.186641Z app/lb/1 198.51.100.7:2817 10.0.0.1:80 0.000 0.001 0.000 429 429 34 366 "GET http://www.example.com:80/a HTTP/1.1" "` + ua + `" - - arn:x "Root=1" "-" "-" 0 2026-10-10T13:55:37.000000Z "forward" "-" "-" "10.0.0.1:80" "429" "-" "-"`, logs.ALB, Status429, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd, err := logs.NewReader(strings.NewReader(tc.line+"\n"), tc.format)
			if err != nil {
				t.Fatal(err)
			}
			lc, bc := NewLimitedClients(), NewBrowsersCaught()
			n := 0
			for rd.Next() {
				lc.Add(rd.Record())
				bc.Add(rd.Record())
				n++
			}
			if n != 1 {
				t.Fatalf("%d records parsed, want 1", n)
			}
			clients, rules := lc.Result(-1, key).Clients, bc.Result().Rules
			if tc.rule == "" {
				if len(clients) != 0 || len(rules) != 0 {
					t.Errorf("limited-clients %+v, browsers-caught %+v; want neither", clients, rules)
				}
				return
			}
			want := LimitedClient{Requests: 1, Rules: []string{tc.rule}}
			if tc.blocked {
				want.Blocked = 1
			} else {
				want.WouldBlock = 1
			}
			if len(clients) != 1 || clients[0].Blocked != want.Blocked || clients[0].WouldBlock != want.WouldBlock ||
				!slices.Equal(clients[0].Rules, want.Rules) {
				t.Errorf("limited-clients = %+v, want one client %+v", clients, want)
			}
			if len(rules) != 1 || rules[0].Rule != tc.rule || rules[0].Blocked != want.Blocked || rules[0].WouldBlock != want.WouldBlock {
				t.Errorf("browsers-caught = %+v, want %s with blocked %d, would block %d", rules, tc.rule, want.Blocked, want.WouldBlock)
			}
		})
	}
}

// TestJSONNames checks the JSON names of the query results.
func TestJSONNames(t *testing.T) {
	lc, bc := NewLimitedClients(), NewBrowsersCaught()
	read(t, all, lc.Add, bc.Add)
	for _, tc := range []struct {
		v    any
		list string
		keys []string
	}{
		{lc.Result(-1, key), "clients", []string{"client", "class", "requests", "blocked", "would_block", "rules", "first", "last"}},
		{bc.Result(), "rules", []string{"rule", "requests", "blocked", "would_block", "clients", "top_paths", "first", "last"}},
	} {
		data, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"query", "lines", "parsed", "unparsed", "files", "requests", "decisions"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q", m["query"], k)
			}
		}
		first := m[tc.list].([]any)[0].(map[string]any)
		for _, k := range tc.keys {
			if _, ok := first[k]; !ok {
				t.Errorf("%s: %s[0] lacks %q: %s", m["query"], tc.list, k, data)
			}
		}
	}
}

// A concurrency cap's 503 is decision "unavailable" in the decision log:
// a refusal, for limited-clients and browsers-caught as for the access
// log's blocked_by.
func TestCapRefusalsCount(t *testing.T) {
	line := `{"time":"2026-11-30T10:00:0%dZ","level":"INFO","msg":"decision","rule":"cap","action":"block","decision":"unavailable","listener":"gateway","route":"api","method":"GET","path":"/slow","ua_class":"browser","key_type":"global","key_hash":"ac728e6142593b67","limit":"max_inflight 1"}` + "\n"
	var in bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&in, line, i)
	}
	rd, err := logs.NewReader(&in, logs.Floodgate)
	if err != nil {
		t.Fatal(err)
	}
	lc, bc := NewLimitedClients(), NewBrowsersCaught()
	for rd.Next() {
		lc.Add(rd.Record())
		bc.Add(rd.Record())
	}
	if r := lc.Result(-1, key); len(r.Clients) != 1 || r.Clients[0].Blocked != 3 || r.Clients[0].Rules[0] != "cap" {
		t.Errorf("limited-clients: %+v, want one client refused 3 times by cap", r.Clients)
	}
	if r := bc.Result(); len(r.Rules) != 1 || r.Rules[0].Rule != "cap" || r.Rules[0].Blocked != 3 {
		t.Errorf("browsers-caught: %+v, want cap with 3 refused", r.Rules)
	}
}

// TestTopPathsWithoutQuery: browsers-caught counts paths, not request
// targets: requests that differ only in their query string are one path,
// and the query (search terms, tokens sent in URLs) is never shown. In
// floodgate's access log, whose path has no query, a "?" is part of the
// path.
func TestTopPathsWithoutQuery(t *testing.T) {
	const ua = `Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0`
	var lines []string
	for i := range 3 {
		lines = append(lines, fmt.Sprintf(`192.0.2.7 - - [17/May/2015:10:05:0%d +0000] "GET /api/search?q=term%d&api_key=k%d HTTP/1.1" 429 0 "-" "%s"`, i, i, i, ua))
	}
	for range 2 {
		lines = append(lines, `192.0.2.8 - - [17/May/2015:10:05:05 +0000] "GET /other HTTP/1.1" 429 0 "-" "`+ua+`"`)
	}
	rd, err := logs.NewReader(strings.NewReader(strings.Join(lines, "\n")+"\n"), logs.Combined)
	if err != nil {
		t.Fatal(err)
	}
	bc := NewBrowsersCaught()
	for rd.Next() {
		bc.Add(rd.Record())
	}
	want := []PathCount{{Path: "/api/search", Requests: 3}, {Path: "/other", Requests: 2}}
	if r := bc.Result(); len(r.Rules) != 1 || !cmp.Equal(r.Rules[0].TopPaths, want) {
		t.Errorf("browsers-caught = %+v, want top paths %+v", r.Rules, want)
	}

	access := `{"time":"2026-12-02T14:19:17.875Z","msg":"access","method":"GET","path":"/a?b","status":429,"route":"default","duration_ms":1,"ua":"` + ua + `","ua_class":"browser","client":"3d460942d0aee600","bytes":2,"blocked_by":"per-ip"}`
	rd, err = logs.NewReader(strings.NewReader(access+"\n"), logs.Floodgate)
	if err != nil {
		t.Fatal(err)
	}
	bc = NewBrowsersCaught()
	for rd.Next() {
		bc.Add(rd.Record())
	}
	want = []PathCount{{Path: "/a?b", Requests: 1}}
	if r := bc.Result(); len(r.Rules) != 1 || !cmp.Equal(r.Rules[0].TopPaths, want) {
		t.Errorf("browsers-caught from the access log = %+v, want top paths %+v", r.Rules, want)
	}
}
