package logs_test

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

var update = flag.Bool("update", false, "rewrite testdata/floodgate.jsonl")

// accessObserver passes decisions on to the decision log and keeps the
// rules that would have blocked the request, for its access record: the
// wiring the gateway needs.
type accessObserver struct {
	*telemetry.Decisions
	wouldBlock []string
}

func (o *accessObserver) Observe(req *rules.Request, r *rules.Rule, out rules.Outcome, key []byte, d ratelimit.Decision, err error) {
	o.Decisions.Observe(req, r, out, key, d, err)
	if err == nil && out == rules.WouldBlock {
		o.wouldBlock = append(o.wouldBlock, r.Name)
	}
}

// fixture runs a small scenario through the real rule engine, decision
// log and access log, and returns both logs interleaved as the gateway
// would write them to one stream.
func fixture(t *testing.T) []byte {
	t.Helper()
	f, err := config.Parse("fixture.yaml", []byte(`
upstreams: {api: {url: 'http://127.0.0.1:1'}}
routes: [{name: api, path: /, upstream: api}]
rules:
  - {name: shadow-requests, action: count, limits: [3/1m]}
  - {name: rate-limit-ip, limits: [5/1m]}
`), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	set, ps := rules.Compile(f)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	var out bytes.Buffer
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Time(slog.TimeKey, now)
		}
		return a
	}}))
	hasher := telemetry.NewKeyHasher("fixture")
	obs := &accessObserver{Decisions: telemetry.NewDecisions(telemetry.NewMetrics("test").ForRules(set, telemetry.ListenerGateway), logger, telemetry.LogAll, hasher, nil)}
	eng := rules.Engine{Set: set, Store: memory.New(memory.Options{Now: func() time.Time { return now }}), Obs: obs}
	access := telemetry.NewAccessLog(&out)
	send := func(ip, ua string, n int) {
		for range n {
			now = now.Add(time.Second)
			r := httptest.NewRequest("GET", "/api/v1/score-sets/urn:mavedb:1/scores", nil)
			r.Header.Set("User-Agent", ua)
			a := netip.MustParseAddr(ip)
			bits := 32
			if a.Is6() {
				bits = 64
			}
			prefix := netip.PrefixFrom(a, bits).Masked()
			req := &rules.Request{HTTP: r, Path: r.URL.Path, Route: "api", ClientIP: a, ClientPrefix: prefix}
			obs.wouldBlock = obs.wouldBlock[:0]
			v := eng.Evaluate(context.Background(), req)
			eng.Finish(context.Background(), req, rules.Response{Status: 200, Forwarded: v.Rule == nil})
			rec := telemetry.AccessRecord{Time: now, Method: r.Method, Path: req.Path, Route: req.Route, Status: 200,
				Duration: 1500 * time.Microsecond, UserAgent: ua, Client: hasher.Hash([]byte(prefix.String())), Bytes: 42,
				WouldBlock: obs.wouldBlock}
			if v.Rule != nil {
				rec.Status, rec.BlockedBy, rec.Bytes = 429, v.Rule.Name, 120
			}
			access.Write(rec)
		}
	}
	send("192.0.2.1", "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", 8)
	send("192.0.2.2", "curl/8.4.0", 2)
	send("2001:db8::1", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", 4)
	logger.Warn("rule skipped", "rule", "x", "error", "example") // not a decision: unparsed
	return out.Bytes()
}

// TestFloodgateFixture keeps testdata/floodgate.jsonl what the real
// writers produce (-update rewrites it), and reads it back: the counts of
// records must be those of the scenario, worked out by hand.
func TestFloodgateFixture(t *testing.T) {
	data := fixture(t)
	name := filepath.Join("testdata", "floodgate.jsonl")
	if *update {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(data)); diff != "" {
		t.Errorf("%s is not what the writers produce (-file +now); run with -update:\n%s", name, diff)
	}

	rd, err := logs.NewReader(bytes.NewReader(data), logs.Auto)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Format() != logs.Floodgate {
		t.Fatalf("format = %v, want floodgate", rd.Format())
	}
	type tally struct{ access, decisions, blocked, wouldBlockAccess, wouldBlockDecisions, browsers int }
	var got tally
	for rd.Next() {
		r := rd.Record()
		if r.Kind == logs.KindDecision {
			got.decisions++
			if string(r.Decision) == "would_block" {
				got.wouldBlockDecisions++
			}
			continue
		}
		got.access++
		if len(r.BlockedBy) > 0 {
			got.blocked++
		}
		if len(r.WouldBlock) > 0 {
			got.wouldBlockAccess++
		}
		if r.Class.String() == "browser" {
			got.browsers++
		}
	}
	// 14 requests. The browser's 8 in one minute: shadow-requests (3/1m)
	// would block the 4th to 8th, rate-limit-ip (5/1m) blocks the 6th to
	// 8th. The crawler's 4: shadow would block the 4th. Every request
	// gets a decision from both rules (log.decisions: all).
	want2 := tally{access: 14, decisions: 28, blocked: 3, wouldBlockAccess: 6, wouldBlockDecisions: 6, browsers: 8}
	if got != want2 {
		t.Errorf("read %+v, want %+v", got, want2)
	}
	if c := rd.Counts(); c.Unparsed != 1 || c.Lines != 43 {
		t.Errorf("Counts() = %+v, want 43 lines, 1 unparsed (the warning)", c)
	}
}
