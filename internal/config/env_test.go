package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const envDoc = `mode: enforce
listen: ${LISTEN:-127.0.0.1:8080}
client_ip:
  header: X-Forwarded-For
  trusted_proxies: [10.0.0.0/8]
upstreams:
  api:
    url: http://127.0.0.1:8081
routes:
  - name: api
    path: /
    upstream: api
rules:
  - name: shadow
    action: count
    limits: [300/1m]
  - name: per-ip
    key: [ip]
    limits: [1500/5m]
    retry_after: 300s
responses:
  cors:
    allow_origin: "*"
    expose_headers: [Retry-After]
environments:
  production:
    rules:
      - name: per-ip
        limits: [3000/5m]
  staging:
    mode: log-only
    listen: ${STAGING_LISTEN}
    client_ip:
      trusted_proxies: 192.168.0.0/16
    upstreams:
      api:
        url: http://staging.internal:8081
    rules:
      - name: shadow
        limits: [30/1m, 100/5m]
      - name: per-ip
        retry_after: ~
    responses:
      cors:
        expose_headers: [Retry-After, RateLimit]
  development:
    listen: ${UNSET_IN_DEVELOPMENT}
`

func parseEnv(t *testing.T, env string, vars map[string]string) *File {
	t.Helper()
	f, err := Parse("env.yaml", []byte(envDoc), env, lookupIn(vars))
	if err != nil {
		t.Fatalf("Parse(env %q): %v", env, err)
	}
	return f
}

// TestEnvironmentThresholdOnly: an overlay that changes one rule's
// limits changes nothing else, and the limit's line is the overlay's.
func TestEnvironmentThresholdOnly(t *testing.T) {
	base := parseEnv(t, "", nil)
	prod := parseEnv(t, "production", nil)

	want := base.Config
	want.Rules = append([]Rule(nil), base.Config.Rules...)
	want.Rules[1].Limits = []string{"3000/5m"}
	if diff := cmp.Diff(prod.Config, want); diff != "" {
		t.Errorf("production config (-got +want):\n%s", diff)
	}
	lines := []struct {
		path      string
		base, env int
	}{
		{path: "rules[1].limits[0]", base: 19, env: 29},
		{path: "rules[1].limits", base: 19, env: 29},
		{path: "rules[1].name", base: 17, env: 28},
		{path: "rules[1]", base: 17, env: 17},
		{path: "rules[1].retry_after", base: 20, env: 20},
		{path: "mode", base: 1, env: 1},
	}
	for _, l := range lines {
		if got := base.Line(l.path); got != l.base {
			t.Errorf("base Line(%q) = %d, want %d", l.path, got, l.base)
		}
		if got := prod.Line(l.path); got != l.env {
			t.Errorf("production Line(%q) = %d, want %d", l.path, got, l.env)
		}
	}
	if prod.Env != "production" {
		t.Errorf("Env = %q, want production", prod.Env)
	}
	if diff := cmp.Diff(prod.Environments, []string{"development", "production", "staging"}); diff != "" {
		t.Errorf("Environments (-got +want):\n%s", diff)
	}
	if probs := prod.Validate(); len(probs) > 0 {
		t.Errorf("production Validate:\n%v", probs)
	}
}

// TestEnvironmentMerge: mappings merge key by key, named items by name,
// other lists and scalars replace, null unsets.
func TestEnvironmentMerge(t *testing.T) {
	base := parseEnv(t, "", nil)
	staging := parseEnv(t, "staging", map[string]string{"STAGING_LISTEN": ":9000"})

	want := base.Config
	want.Mode = "log-only"
	want.Listen = ":9000"
	want.ClientIP.TrustedProxies = StringList{"192.168.0.0/16"}
	want.Upstreams = map[string]Upstream{"api": {URL: "http://staging.internal:8081"}}
	want.Rules = append([]Rule(nil), base.Config.Rules...)
	want.Rules[0].Limits = []string{"30/1m", "100/5m"}
	want.Rules[1].RetryAfter = ""
	want.Responses.CORS.ExposeHeaders = []string{"Retry-After", "RateLimit"}
	if diff := cmp.Diff(staging.Config, want); diff != "" {
		t.Errorf("staging config (-got +want):\n%s", diff)
	}
	if staging.Has("rules[1].retry_after") {
		t.Errorf(`Has("rules[1].retry_after") = true, want false: staging unsets it`)
	}
	if got := staging.Line("client_ip.header"); got != 4 {
		t.Errorf(`staging Line("client_ip.header") = %d, want 4 (the base's)`, got)
	}
	if got := staging.Line("client_ip.trusted_proxies"); got != 34 {
		t.Errorf(`staging Line("client_ip.trusted_proxies") = %d, want 34 (the overlay's)`, got)
	}
}

// TestEnvironmentExpansion: only the effective document is expanded, so
// a variable that another environment replaces need not be set.
func TestEnvironmentExpansion(t *testing.T) {
	parseEnv(t, "", nil)           // STAGING_LISTEN and UNSET_IN_DEVELOPMENT unused
	parseEnv(t, "production", nil) // likewise
	_, err := Parse("env.yaml", []byte(envDoc), "development", nil)
	if err == nil || !strings.Contains(err.Error(), "env.yaml:47: listen: environment variable UNSET_IN_DEVELOPMENT is not set") {
		t.Errorf("Parse(env development) error = %v, want UNSET_IN_DEVELOPMENT at line 47", err)
	}
}

func TestEnvironmentUnknown(t *testing.T) {
	f, err := Parse("env.yaml", []byte(envDoc), "prod", nil)
	want := Problems{{
		File:    "env.yaml",
		Line:    25,
		Field:   "environments",
		Msg:     `environment "prod" is not defined`,
		Allowed: []string{"development", "production", "staging"},
	}}
	var got Problems
	if !errors.As(err, &got) {
		t.Fatalf("Parse(env prod) error = %v, want Problems", err)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Parse(env prod) problems (-got +want):\n%s", diff)
	}
	if probs := f.Validate(); len(probs) > 0 {
		t.Errorf("Validate after an unknown environment = %v, want nothing more", probs)
	}
	if got, want := f.EnvProblem(), `environment "prod" is not defined`; got != want {
		t.Errorf("EnvProblem() after an unknown environment = %q, want %q", got, want)
	}
	if f, _ := Parse("env.yaml", []byte(envDoc), "production", nil); f.EnvProblem() != "" {
		t.Errorf("EnvProblem() after a defined environment = %q, want none", f.EnvProblem())
	}
}

// TestEnvironmentNullNamed: an overlay's ~ on something merged by name
// (rules, routes, upstreams, route groups, plans, a route's params or
// query caps) would remove what the base defines, which an environment
// cannot do: it is a problem at the overlay's line, in every
// environment, applied or not. Elsewhere ~ unsets a value.
func TestEnvironmentNullNamed(t *testing.T) {
	const base = `upstreams:
  api: {url: "http://127.0.0.1:8081"}
routes:
  - name: item
    path: /items/{id}
    upstream: api
    params: {id: int}
    query: {max: {page: 10}}
    group: api
route_groups:
  api: {prefix: /items/}
api_clients:
  plans: {free: [10/1m]}
  clients: [{id: c, plan: free}]
rules:
  - name: a
    limits: [100/1m]
    retry_after: 60s
    message: Slow down.
environments:
  production:
`
	tests := []struct {
		name    string
		overlay string
		want    string // "" for no problem
	}{
		{name: "rules", overlay: "    rules: ~",
			want: "t.yaml:22: environments.production.rules: ~ would remove every rule the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "rules left empty", overlay: "    rules:",
			want: "t.yaml:22: environments.production.rules: ~ would remove every rule the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "rules null written out", overlay: "    rules: null",
			want: "t.yaml:22: environments.production.rules: ~ would remove every rule the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "routes", overlay: "    routes: ~",
			want: "t.yaml:22: environments.production.routes: ~ would remove every route the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "upstreams", overlay: "    upstreams: ~",
			want: "t.yaml:22: environments.production.upstreams: ~ would remove every upstream the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "route groups", overlay: "    route_groups: ~",
			want: "t.yaml:22: environments.production.route_groups: ~ would remove every route group the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "plans", overlay: "    api_clients: {plans: ~}",
			want: "t.yaml:22: environments.production.api_clients.plans: ~ would remove every plan the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "a route's params", overlay: "    routes: [{name: item, params: ~}]",
			want: "t.yaml:22: environments.production.routes[0].params: ~ would remove every parameter constraint the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "a route's query caps", overlay: "    routes:\n      - name: item\n        query: {max: ~}",
			want: "t.yaml:24: environments.production.routes[0].query.max: ~ would remove every query cap the base defines; an environment changes them by name but cannot add or remove them"},
		{name: "one plan", overlay: "    api_clients: {plans: {free: ~}}",
			want: "t.yaml:22: environments.production.api_clients.plans.free: ~ would remove api_clients.plans's entry \"free\"; an environment changes an entry but cannot remove one"},
		{name: "one query cap", overlay: "    routes:\n      - name: item\n        query: {max: {page: ~}}",
			want: "t.yaml:24: environments.production.routes[0].query.max.page: ~ would remove routes[0].query.max's entry \"page\"; an environment changes an entry but cannot remove one"},
		{name: "one upstream", overlay: "    upstreams: {api: ~}",
			want: "t.yaml:22: environments.production.upstreams.api: ~ would remove upstreams's entry \"api\"; an environment changes an entry but cannot remove one"},
		{name: "a null item", overlay: "    rules: [~]",
			want: "t.yaml:22: environments.production.rules[0]: an item in an environment needs a name, the name of the rules item it changes"},

		{name: "a rule's retry_after", overlay: "    rules: [{name: a, retry_after: ~}]"},
		{name: "a rule's message", overlay: "    rules: [{name: a, message: ~}]"},
		{name: "no rules anywhere", overlay: "    route_groups: {api: {prefix: /items}}"},
		{name: "empty lists change nothing", overlay: "    rules: []\n    routes: []\n    upstreams: {}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := base + tt.overlay + "\n  staging: {}\n"
			for _, env := range []string{"production", "staging"} {
				f, err := Parse("t.yaml", []byte(doc), env, nil)
				got := ""
				if err != nil {
					got = err.Error()
				} else if probs := f.Validate(); len(probs) > 0 {
					got = probs.Error()
				}
				if got != tt.want {
					t.Errorf("env %s: Parse and Validate of\n%s\n=\n%s\nwant\n%s", env, tt.overlay, got, tt.want)
				}
			}
		})
	}
}
