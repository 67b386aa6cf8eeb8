package rules_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit/memory"
	"github.com/floodgate/floodgate/ratelimit/storetest"
)

const plansYAML = `upstreams: {api: {url: 'http://127.0.0.1:1'}}
api_clients:
  plans:
    standard: [3/1m, 10/1d]
    enhanced: [5/1m]
    exempt: []
  clients:
    - {id: a, plan: standard}
    - {id: b, plan: enhanced}
    - {id: c, plan: exempt}
rules:
  - name: per-session
    key: [session]
    limits: [2/1m]
  - name: plan
    key: [api_client]
    limits_from: plan
`

func compilePlans(t *testing.T) *rules.Set {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(plansYAML), "", nil)
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
	return set
}

// TestPlansCompileToOneRulePerPlan: limits_from: plan makes one rule per
// plan with limits, in name order, each with its plan's limits and index.
func TestPlansCompileToOneRulePerPlan(t *testing.T) {
	set := compilePlans(t)
	var got []string
	for i, r := range set.Rules {
		if r.Index != i {
			t.Errorf("rule %s has Index %d, want %d", r.Name, r.Index, i)
		}
		got = append(got, r.Name+"/"+r.Plan)
	}
	want := []string{"per-session/", "plan.enhanced/enhanced", "plan.standard/standard"}
	if len(got) != len(want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("rules %v, want %v", got, want)
		}
	}
	if n := len(set.Rules[2].Limits); n != 2 || set.Rules[2].ConfigIndex != 1 {
		t.Errorf("plan.standard: %d limits, config index %d; want 2 and 1", n, set.Rules[2].ConfigIndex)
	}
}

// TestPlanLimitsAndIdentityKeys: each client is held to its plan, exempt
// and unknown clients are not limited by the plan rule, and a rule keyed
// by session does not apply to requests without one (they do not share
// one counter).
func TestPlanLimitsAndIdentityKeys(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	eng := &rules.Engine{Set: compilePlans(t), Store: memory.New(memory.Options{Now: clock.Now})}
	plans := map[string]string{"a": "standard", "b": "enhanced", "c": "exempt"}
	eval := func(client, session string) string {
		r := httptest.NewRequest("GET", "/v1/images/", nil)
		addr := netip.MustParseAddr("192.0.2.7")
		req := &rules.Request{HTTP: r, Path: r.URL.Path, ClientIP: addr, ClientPrefix: netip.PrefixFrom(addr, 32),
			APIClient: client, APIClientPlan: plans[client], Session: session, SessionValid: session != ""}
		v := eng.Evaluate(context.Background(), req)
		eng.Finish(context.Background(), req, rules.Response{Status: 200})
		if v.Rule == nil {
			return "forward"
		}
		return v.Rule.Name
	}
	admitted := func(client string) int {
		n := 0
		for range 20 {
			if eval(client, "") == "forward" {
				n++
			}
		}
		return n
	}
	for client, want := range map[string]int{"a": 3, "b": 5, "c": 20, "": 20} {
		if got := admitted(client); got != want {
			t.Errorf("client %q (plan %q): %d of 20 admitted, want %d", client, plans[client], got, want)
		}
	}
	// Sessions: two each, then refused; no session: never counted.
	for _, s := range []string{"s1", "s2"} {
		for i := range 3 {
			got, want := eval("c", s), "forward"
			if i == 2 {
				want = "per-session"
			}
			if got != want {
				t.Errorf("session %s request %d: %s, want %s", s, i+1, got, want)
			}
		}
	}
}

// TestPlanRuleProblemsWhateverThePlans: a limits_from: plan rule's own
// problems (here its condition) are reported once, whichever plan sorts
// first and even when no plan has limits.
func TestPlanRuleProblemsWhateverThePlans(t *testing.T) {
	for _, plans := range []string{
		"{basic: [], pro: [10/1m]}",   // the first plan has no limits
		"{pro: [10/1m], zzz: [5/1m]}", // two plans with limits
		"{basic: [], free: []}",       // none has limits
	} {
		src := `upstreams: {api: {url: 'http://127.0.0.1:1'}}
api_clients:
  plans: ` + plans + `
rules:
  - name: plan
    when: "request.method == 'GET' &&& bogus("
    key: [api_client]
    limits_from: plan
`
		f, err := config.Parse("t.yaml", []byte(src), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Config.ApplyDefaults()
		if ps := f.Validate(); len(ps) > 0 {
			t.Fatal(ps)
		}
		_, ps := rules.Compile(f)
		if len(ps) != 1 || ps[0].Field != "rules[0].when" {
			t.Errorf("plans %s: Compile problems %v, want one, of rules[0].when", plans, ps)
		}
	}
}
