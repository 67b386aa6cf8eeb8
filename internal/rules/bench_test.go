package rules_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

// exampleSecrets are what examples/openverse.yaml needs outside development.
var exampleSecrets = map[string]string{
	"FLOODGATE_ADMIN_TOKEN": "bench-admin-token-0123456789",
	"HMAC_SIGNING_SECRET":   "bench-signing-secret-0123456789-0123456789",
	"API_CLIENT_ID":         "bench", "API_CLIENT_SECRET": "bench-secret",
}

// exampleEngine compiles an example's rules with every limit raised (so
// that nothing is limited and each request does the full work) over a
// memory store.
func exampleEngine(tb testing.TB, file string) *rules.Engine {
	tb.Helper()
	f, err := config.Load(file, "", func(k string) (string, bool) { v, ok := exampleSecrets[k]; return v, ok })
	if err != nil {
		tb.Fatal(err)
	}
	f.Config.ApplyDefaults()
	for i := range f.Config.Rules {
		// Nothing limited: a billion requests, or a million
		// upstream-seconds (the store counts those in milliseconds).
		n := "1000000000"
		if f.Config.Rules[i].Cost == config.CostUpstreamSeconds {
			n = "1000000"
		}
		for j, l := range f.Config.Rules[i].Limits {
			f.Config.Rules[i].Limits[j] = n + l[indexByte(l, '/'):]
		}
	}
	for name, p := range f.Config.APIClients.Plans {
		for j, l := range p {
			p[j] = "1000000000" + l[indexByte(l, '/'):]
		}
		f.Config.APIClients.Plans[name] = p
	}
	set, ps := rules.Compile(f)
	if len(ps) > 0 {
		tb.Fatal(ps)
	}
	return &rules.Engine{Set: set, Store: memory.New(memory.Options{}), Inflight: new(rules.Inflight)}
}

func indexByte(s string, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return len(s)
}

// exampleRequests are a typical request per example: MaveDB's CSV
// download (every rule matches), Openverse's search with a session, as the
// gateway fills them.
func exampleRequest(name string) *rules.Request {
	addr := netip.MustParseAddr("198.51.100.7")
	switch name {
	case "mavedb-api":
		// bench/gateway.sh's request: no CSV download, so every condition
		// is false and only the two IP rules count it.
		r := httptest.NewRequest("GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1", nil)
		r.Header.Set("User-Agent", "wrk")
		return &rules.Request{HTTP: r, Path: r.URL.Path, Route: "api",
			ClientIP: addr, ClientPrefix: netip.PrefixFrom(addr, 32)}
	case "mavedb":
		r := httptest.NewRequest("GET", "/api/v1/score-sets/urn:mavedb:00000053-a-1/scores", nil)
		r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0")
		return &rules.Request{HTTP: r, Path: r.URL.Path, Route: "csv-scores", RouteGroup: "bulk",
			ClientIP: addr, ClientPrefix: netip.PrefixFrom(addr, 32)}
	default:
		r := httptest.NewRequest("GET", "/api/search/image/?q=cat", nil)
		r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0")
		return &rules.Request{HTTP: r, Path: r.URL.Path, Route: "api-search", RouteGroup: "api",
			ClientIP: addr, ClientPrefix: netip.PrefixFrom(addr, 32), SessionPresent: true, SessionValid: true,
			Session: "q2s5OTNPl8oUtbu0mZCjLw", APIClient: "openverse.org", APIClientPlan: "frontend"}
	}
}

var examples = map[string]string{"mavedb": "../../examples/mavedb.yaml", "mavedb-api": "../../examples/mavedb.yaml",
	"openverse": "../../examples/openverse.yaml"}

// BenchmarkEvaluate: rule evaluation for the two example rule sets, store
// decisions included.
func BenchmarkEvaluate(b *testing.B) {
	for _, name := range []string{"mavedb", "mavedb-api", "openverse"} {
		b.Run("rules="+name, func(b *testing.B) {
			e := exampleEngine(b, examples[name])
			req := exampleRequest(name)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if v := e.Evaluate(ctx, req); v.Rule != nil {
					b.Fatalf("refused by %s", v.Rule.Name)
				}
				e.Finish(ctx, req, rules.Response{Status: 200})
				keep := *req
				req.Reset()
				req.HTTP, req.Path, req.Route, req.RouteGroup = keep.HTTP, keep.Path, keep.Route, keep.RouteGroup
				req.ClientIP, req.ClientPrefix = keep.ClientIP, keep.ClientPrefix
				req.SessionPresent, req.SessionValid, req.Session = keep.SessionPresent, keep.SessionValid, keep.Session
				req.APIClient, req.APIClientPlan = keep.APIClient, keep.APIClientPlan
			}
		})
	}
}

// TestEvaluateAllocations holds the example rule sets' allocation budget
// per request, Finish included. The store, the keys and the conditions
// (all in the direct subset) allocate nothing; MaveDB's CSV download
// keeps one: the key its upstream-seconds budget is charged to after the
// response.
func TestEvaluateAllocations(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -race and -cover")
	}
	for name, budget := range map[string]float64{"mavedb": 1, "mavedb-api": 0, "openverse": 0} {
		e := exampleEngine(t, examples[name])
		req := exampleRequest(name)
		ctx := context.Background()
		e.Evaluate(ctx, req) // warm the pools and the key table
		n := testing.AllocsPerRun(200, func() {
			e.Evaluate(ctx, req)
			e.Finish(ctx, req, rules.Response{Status: 200})
		})
		t.Logf("%s: %.0f allocations per evaluation", name, n)
		if n > budget {
			t.Errorf("%s: %.0f allocations per evaluation, budget %.0f", name, n, budget)
		}
	}
}
