package baseline

import (
	"bufio"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/uaclass"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
	curl    = "curl/8.4.0"
	bot     = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

type req struct {
	client string
	at     time.Duration // after t0
	ua     string
}

func rec(r req) *logs.Record {
	return &logs.Record{Client: []byte(r.client), Time: t0.Add(r.at).UnixNano(), UserAgent: []byte(r.ua), HasUserAgent: r.ua != "", Bytes: -1}
}

func build(windows []time.Duration, reqs []req) *Baseline {
	b := New(windows)
	for _, r := range reqs {
		b.Add(rec(r))
	}
	return b
}

const s, m = time.Second, time.Minute

// traffic: a browser bursting 5 in one minute, a script steady at 2 a
// minute, a crawler with 3 at once.
var traffic = []req{
	{"192.0.2.1", 0, firefox}, {"192.0.2.1", 10 * s, firefox}, {"192.0.2.1", 20 * s, firefox},
	{"192.0.2.1", 30 * s, firefox}, {"192.0.2.1", 59 * s, firefox}, {"192.0.2.1", 60 * s, firefox},
	{"192.0.2.2", 0, curl}, {"192.0.2.2", 30 * s, curl}, {"192.0.2.2", m, curl}, {"192.0.2.2", m + 30*s, curl},
	{"192.0.2.2", 2 * m, curl}, {"192.0.2.2", 2*m + 30*s, curl}, {"192.0.2.2", 3 * m, curl},
	{"crawl.example.net", 4 * m, bot}, {"crawl.example.net", 4*m + s, bot}, {"crawl.example.net", 4*m + 2*s, bot},
}

func TestPeaks(t *testing.T) {
	b := build([]time.Duration{m, 5 * m}, traffic)
	if got := b.Peaks(0); !slices.Equal(got, []uint32{5, 2, 3}) {
		t.Errorf("1m peaks = %v, want [5 2 3]", got)
	}
	if got := b.Peaks(1); !slices.Equal(got, []uint32{6, 7, 3}) {
		t.Errorf("5m peaks = %v, want [6 7 3]", got)
	}
	for id, want := range []uaclass.Class{uaclass.Browser, uaclass.Script, uaclass.Crawler} {
		if got := b.Class(ClientID(id)); got != want {
			t.Errorf("Class(%d) = %v, want %v", id, got, want)
		}
	}
}

// TestOutOfOrder: the same requests in any order give the same peaks and
// would-blocks.
func TestOutOfOrder(t *testing.T) {
	want := build([]time.Duration{m, 5 * m}, traffic)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		shuffled := slices.Clone(traffic)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		b := build([]time.Duration{m, 5 * m}, shuffled)
		for wi := range 2 {
			// Clients are numbered in order of appearance: compare by name.
			got, exp := byName(b, b.Peaks(wi)), byName(want, want.Peaks(wi))
			if diff := cmp.Diff(got, exp); diff != "" {
				t.Fatalf("window %d peaks (-shuffled +sorted):\n%s", wi, diff)
			}
			for _, th := range []int64{1, 2, 3, 5} {
				r1, c1, b1 := b.WouldBlock(wi, th)
				r2, c2, b2 := want.WouldBlock(wi, th)
				if r1 != r2 || c1 != c2 || b1 != b2 {
					t.Fatalf("WouldBlock(%d, %d) = %d %d %d shuffled, %d %d %d sorted", wi, th, r1, c1, b1, r2, c2, b2)
				}
			}
		}
	}
}

func byName(b *Baseline, peaks []uint32) map[string]uint32 {
	out := map[string]uint32{}
	for id, p := range peaks {
		name, _ := b.ClientName(ClientID(id))
		out[name] = p
	}
	return out
}

// TestWouldBlockArithmetic checks WouldBlock against the sum over clients
// and aligned windows of max(0, count − threshold), counted here from the
// requests themselves.
func TestWouldBlockArithmetic(t *testing.T) {
	b := build([]time.Duration{m}, traffic)
	for th := int64(0); th <= 6; th++ {
		counts := map[string]map[int64]int64{}
		for _, r := range traffic {
			if counts[r.client] == nil {
				counts[r.client] = map[int64]int64{}
			}
			counts[r.client][t0.Add(r.at).Unix()/60]++
		}
		var want int64
		wantClients, wantBrowsers := 0, 0
		for c, ws := range counts {
			over := false
			for _, n := range ws {
				if n > th {
					want += n - th
					over = true
				}
			}
			if over {
				wantClients++
				if c == "192.0.2.1" {
					wantBrowsers++
				}
			}
		}
		req, cl, br := b.WouldBlock(0, th)
		if req != want || cl != wantClients || br != wantBrowsers {
			t.Errorf("WouldBlock(1m, %d) = %d, %d, %d; want %d, %d, %d", th, req, cl, br, want, wantClients, wantBrowsers)
		}
	}
}

func TestPercentiles(t *testing.T) {
	for _, tc := range []struct {
		peaks []uint32
		want  Peaks
	}{
		{nil, Peaks{}},
		{[]uint32{7}, Peaks{7, 7, 7, 7, 7}},
		{[]uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Peaks{PeakMax: 10, PeakP50: 5, PeakP90: 9, PeakP99: 10, PeakP999: 10}},
		{[]uint32{5, 1, 1, 1}, Peaks{PeakMax: 5, PeakP50: 1, PeakP90: 5, PeakP99: 5, PeakP999: 5}},
	} {
		if got := percentiles(tc.peaks); got != tc.want {
			t.Errorf("percentiles(%v) = %+v, want %+v", tc.peaks, got, tc.want)
		}
	}
	// 1000 clients with peaks 1…1000: p99.9 is 999, p99 990.
	var many []uint32
	for i := 1000; i >= 1; i-- {
		many = append(many, uint32(i))
	}
	if got := percentiles(many); got.PeakP999 != 999 || got.PeakP99 != 990 || got.PeakP50 != 500 {
		t.Errorf("percentiles(1…1000) = %+v", got)
	}
}

func TestRoundUp(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{0, 0}, {1, 1}, {10, 10}, {11, 12}, {13, 15}, {108, 120}, {739, 800}, {840, 1000}, {1234, 1500},
		{1500, 1500}, {8156, 10000}, {2_000_001, 2_500_000},
	} {
		if got := RoundUp(tc.in); got != tc.want {
			t.Errorf("RoundUp(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestClassTies(t *testing.T) {
	b := build(nil, []req{{"a", 0, firefox}, {"a", s, curl}, {"b", 0, curl}, {"b", s, bot}, {"c", 0, ""}})
	for id, want := range []uaclass.Class{uaclass.Browser, uaclass.Crawler, uaclass.Unknown} {
		if got := b.Class(ClientID(id)); got != want {
			t.Errorf("Class(%d) = %v, want %v", id, got, want)
		}
	}
}

func TestDecisionsSkipped(t *testing.T) {
	b := New(nil)
	if _, ok := b.Add(&logs.Record{Kind: logs.KindDecision, Client: []byte("h")}); ok {
		t.Error("Add(decision) counted")
	}
	if b.Requests() != 0 || b.Decisions() != 1 {
		t.Errorf("Requests %d, Decisions %d; want 0, 1", b.Requests(), b.Decisions())
	}
}

func TestNamer(t *testing.T) {
	n := Namer{Key: []byte("k")}
	a, b := n.Name("192.0.2.1", false), n.Name("192.0.2.1", false)
	if a != b || len(a) != 16 || strings.Contains(a, "192") {
		t.Errorf("Name = %q, %q: want the same 16 hex digits, not the address", a, b)
	}
	if other := (Namer{Key: []byte("other")}).Name("192.0.2.1", false); other == a {
		t.Error("another key gives the same hash")
	}
	if got := n.Name("3f2a", true); got != "3f2a" {
		t.Errorf("hashed name = %q, want it as is", got)
	}
	if got := (Namer{Show: true}).Name("192.0.2.1", false); got != "192.0.2.1" {
		t.Errorf("Show name = %q", got)
	}
	// Addresses the gateway counts as one client have one hash: an IPv6
	// /64, an IPv4 address written mapped. A host name is its own.
	for _, tc := range []struct{ a, b string }{
		{"2001:db8:1:2::7", "2001:db8:1:2:ffff::1"},
		{"192.0.2.1", "::ffff:192.0.2.1"},
	} {
		if ha, hb := n.Name(tc.a, false), n.Name(tc.b, false); ha != hb {
			t.Errorf("Name(%q) = %q, Name(%q) = %q: want one hash", tc.a, ha, tc.b, hb)
		}
	}
	if n.Name("2001:db8:1:2::7", false) == n.Name("2001:db8:1:3::7", false) {
		t.Error("two /64s have one hash")
	}
	if n.Name("host.example", false) == n.Name("host.example.", false) {
		t.Error("two host names have one hash")
	}
}

// TestResultShape checks the JSON field names, which are interface: scripts read them.
func TestResultShape(t *testing.T) {
	r := build(nil, traffic).Result(ResultOptions{Namer: Namer{Key: []byte("k")}})
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Lines, Parsed, Unparsed, Clients *int64
		Windows                          []map[string]any
		Suggestions                      []map[string]any
		TopClients                       []map[string]any `json:"top_clients"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if v.Lines == nil || v.Parsed == nil || v.Unparsed == nil || v.Clients == nil || *v.Clients != 3 {
		t.Errorf("top-level fields missing: %s", data)
	}
	if len(v.Windows) != 2 {
		t.Fatalf("windows = %v", v.Windows)
	}
	for _, k := range []string{"window", "peak_max", "peak_p50", "peak_p90", "peak_p99", "peak_p999", "by_class"} {
		if _, ok := v.Windows[0][k]; !ok {
			t.Errorf("windows[0] lacks %q", k)
		}
	}
	if v.Windows[0]["window"] != "1m" || v.Windows[1]["window"] != "5m" {
		t.Errorf("windows = %v, %v; want 1m, 5m", v.Windows[0]["window"], v.Windows[1]["window"])
	}
	if len(v.Suggestions) == 0 {
		t.Fatal("no suggestions")
	}
	for _, k := range []string{"window", "threshold", "would_block_requests", "would_block_clients", "would_block_browser_clients"} {
		if _, ok := v.Suggestions[0][k]; !ok {
			t.Errorf("suggestions[0] lacks %q", k)
		}
	}
	if len(v.TopClients) != 3 || v.TopClients[0]["class"] != "browser" {
		t.Errorf("top_clients = %v", v.TopClients)
	}
}

// TestElasticExcerpt measures the real excerpt and checks the busiest
// client against a count made here: 75.97.9.59 sent 108 requests in the
// minute 18/May/2015:08:05 (the data README says so too).
func TestElasticExcerpt(t *testing.T) {
	const name = "../testdata/elastic_excerpt.log"
	b := New(nil)
	files, err := logs.ReadFiles([]string{name}, logs.ReadOptions{}, func(r *logs.Record) { b.Add(r) })
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Unparsed != 1 {
		t.Errorf("unparsed = %d, want 1 (the truncated line)", files[0].Unparsed)
	}
	// Independent count: lines per client and minute, from the text.
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	perMinute := map[string]int{}
	clients := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if !strings.HasSuffix(sc.Text(), `"`) { // the truncated line
			continue
		}
		clients[f[0]] = true
		perMinute[f[0]+f[3][:18]]++
	}
	most := 0
	for _, n := range perMinute {
		most = max(most, n)
	}
	r := b.Result(ResultOptions{Top: 1, Namer: Namer{Show: true}})
	if r.Clients != len(clients) {
		t.Errorf("clients = %d, want %d", r.Clients, len(clients))
	}
	if r.Windows[0].PeakMax != int64(most) || most != 108 {
		t.Errorf("1m peak max = %d, counted %d, want 108", r.Windows[0].PeakMax, most)
	}
	if top := r.TopClients[0]; top.Client != "75.97.9.59" || top.Peaks["1m"] != 108 {
		t.Errorf("top client = %+v, want 75.97.9.59 at 108", top)
	}
}

func BenchmarkAdd(b *testing.B) {
	recs := make([]*logs.Record, 0, 1000)
	for i := range 1000 {
		recs = append(recs, rec(req{client: "192.0.2." + string(rune('0'+i%10)), at: time.Duration(i) * s, ua: firefox}))
	}
	bl := New(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bl.Add(recs[i%len(recs)])
		i++
	}
}
