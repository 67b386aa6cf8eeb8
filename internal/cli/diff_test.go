package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffOnlyThresholds(t *testing.T) {
	code, stdout, stderr := run(t, nil, "diff", "--config", "../../examples/mavedb.yaml", "staging", "production")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`rules[rate-limit-ip].limits[0]               staging: "300/5m"  production: "1500/5m"  (threshold)`,
		`rules[rate-limit-csv-endpoints].limits[0]`,
		`rules[shadow-requests].limits[0]`,
		"differ only in thresholds (3)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDiffMoreThanThresholds(t *testing.T) {
	code, stdout, _ := run(t, nil, "diff", "--config", "testdata/envs-differ.yaml", "staging", "production")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		`rules[per-ip].action`,
		`rules[per-token].key[0]`,
		`rules[per-ip].limits[0]`, // listed too, as a threshold
		"differ in more than thresholds: rules[per-ip].action, rules[per-token].key[0]",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDiffUsage(t *testing.T) {
	if code, _, _ := run(t, nil, "diff", "--config", "../../examples/mavedb.yaml", "staging"); code != 2 {
		t.Errorf("one environment: exit %d, want 2", code)
	}
	if code, _, stderr := run(t, nil, "diff", "--config", "../../examples/mavedb.yaml", "staging", "nope"); code != 2 || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown environment: exit %d, stderr %q", code, stderr)
	}
}

func TestExplainRepeatedHeader(t *testing.T) {
	// Two -H of one name are one field given twice, which the rules see
	// joined with ", ", as they see a real request's.
	file := filepath.Join(t.TempDir(), "keys.yaml")
	if err := os.WriteFile(file, []byte(`
upstreams: {api: {url: "http://127.0.0.1:9"}}
rules:
  - {name: two-keys, when: "request.headers['x-api-key'] == 'a, b'", limits: [1/1m]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, nil, "explain", "--config", file, "--json", "GET", "/", "-H", "X-Api-Key: a", "-H", "x-api-key: b")
	if code != 0 || !strings.Contains(stdout, `"decision": "allowed"`) {
		t.Errorf("exit %d, the rule does not match both values:\n%s%s", code, stdout, stderr)
	}
	_, stdout, _ = run(t, nil, "explain", "--config", file, "--json", "GET", "/", "-H", "X-Api-Key: b")
	if strings.Contains(stdout, `"decision": "allowed"`) {
		t.Errorf("one value matches the rule for two:\n%s", stdout)
	}
}

func TestExplainFiltersTheQueryAsServeDoes(t *testing.T) {
	// A parameter the route does not allow is dropped before the rules
	// run (they see what is forwarded), and one over its cap is a 400.
	file := filepath.Join(t.TempDir(), "q.yaml")
	if err := os.WriteFile(file, []byte(`
upstreams: {api: {url: "http://127.0.0.1:9"}}
routes:
  - {name: x, path: /, upstream: api, query: {allow: [q, n], max: {n: 5}}}
rules:
  - {name: sees-evil, action: deny, when: "'evil' in request.query"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/x?evil=1": "verdict: forward to upstream api",
		"/x?n=9":    "verdict: 400: query parameter n over its cap",
		"/x?n=5":    "verdict: forward to upstream api",
	} {
		if _, stdout, stderr := run(t, nil, "explain", "--config", file, "GET", path); !strings.Contains(stdout, want) {
			t.Errorf("explain GET %s: want %q:\n%s%s", path, want, stdout, stderr)
		}
	}
}

func TestExplainGPTBot(t *testing.T) {
	code, stdout, stderr := run(t, nil, "explain", "--config", "../../examples/mavedb.yaml",
		"GET", "/api/v1/score-sets/urn:mavedb:00000053-a-1/scores", "-H", "User-Agent: GPTBot/1.2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"block-ai-crawlers-on-csv     deny   denied",
		"rate-limit-csv-endpoints     block  not reached",
		"verdict: 403 by rule block-ai-crawlers-on-csv",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, stdout)
		}
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("explain's line %q ends in blanks", line)
		}
	}
	// Without the crawler's user agent, the CSV rule counts it.
	_, stdout, _ = run(t, nil, "explain", "--config", "../../examples/mavedb.yaml", "--json",
		"GET", "/api/v1/score-sets/urn:mavedb:00000053-a-1/scores", "--ip", "2001:db8::7")
	for _, want := range []string{`"name": "rate-limit-csv-endpoints"`, `"decision": "allowed"`, `"remaining": 100`, `"key_type": "ip"`, `"verdict": "forward to upstream api"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain --json lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "2001:db8") {
		t.Errorf("explain printed the client address:\n%s", stdout)
	}
}

// TestDiffWithTheDocumentedStandIns runs the CI parity check of
// docs/operations.md as written: its stand-in for every secret passes the
// same checks as a secret, so Openverse's environments compare equal.
func TestDiffWithTheDocumentedStandIns(t *testing.T) {
	data, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "\nS=")
	if !ok {
		t.Fatal("docs/operations.md shows no S=… stand-in")
	}
	lines := strings.SplitN(after, "\n", 3)
	standIn := lines[0]
	vars := map[string]string{}
	for _, w := range strings.Fields(lines[1]) {
		if name, ok := strings.CutSuffix(w, "=$S"); ok {
			vars[name] = standIn
		}
	}
	if len(vars) != 4 {
		t.Fatalf("want the four variables of examples/openverse.yaml set to the stand-in, got %v", vars)
	}
	code, stdout, stderr := run(t, vars, "diff", "--config", "../../examples/openverse.yaml", "staging", "production")
	if code != 0 || !strings.Contains(stdout, "identical") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestDiffReportsEveryProblemOfEachEnvironment: diff is CI's parity gate,
// so a file an environment cannot serve fails it, with every problem of
// each environment printed as validate prints it, and nothing compared.
func TestDiffReportsEveryProblemOfEachEnvironment(t *testing.T) {
	const envs = "environments:\n  staging: {rules: [{name: a, limits: [10/1m]}]}\n  production: {}\n"
	for _, tc := range []struct {
		name, yaml string
		broken     []string // the environments with problems
	}{
		{
			name:   "a condition neither compiles",
			yaml:   base + "rules:\n  - {name: a, limits: [10/1m], when: request.nope == 1}\n" + envs,
			broken: []string{"staging", "production"},
		},
		{
			name:   "a message neither compiles",
			yaml:   base + "rules:\n  - {name: a, limits: [10/1m], message: {en: 'wait {seconds}'}}\n" + envs,
			broken: []string{"staging", "production"},
		},
		{
			name:   "several problems",
			yaml:   base + "mode: bad\nrules:\n  - {name: a, limits: [10/1m], when: request.nope == 1, message: '{x}'}\n" + envs,
			broken: []string{"staging", "production"},
		},
		{
			name: "one environment's condition",
			yaml: base + "rules:\n  - {name: a, limits: [10/1m]}\n" +
				"environments:\n  staging: {}\n  production: {rules: [{name: a, when: request.nope == 1}]}\n",
			broken: []string{"production"},
		},
		{
			name: "one environment's trusted proxy",
			yaml: base + "rules:\n  - {name: a, limits: [10/1m]}\n" +
				"environments:\n  staging: {client_ip: {trusted_proxies: [10.0.0.1/8]}}\n  production: {}\n",
			broken: []string{"staging"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, tc.yaml)
			code, stdout, stderr := run(t, nil, "diff", "--config", file, "staging", "production")
			var want strings.Builder
			for _, env := range tc.broken {
				vcode, _, vstderr := run(t, nil, "validate", "--config", file, "--env", env)
				if vcode != 1 {
					t.Fatalf("validate --env %s: exit %d, want 1", env, vcode)
				}
				want.WriteString("environment " + env + ":\n" + vstderr)
			}
			if code != 1 {
				t.Errorf("exit %d, want 1 as validate's", code)
			}
			if stdout != "" {
				t.Errorf("diff compared environments with problems:\n%s", stdout)
			}
			if diff := cmp.Diff(stderr, want.String()); diff != "" {
				t.Errorf("diff's stderr, against validate's for each environment (-got +want):\n%s", diff)
			}
		})
	}
}

// TestDiffComparesMeaning: a value written another way in one
// environment is no difference when floodgate reads it alike (a duration,
// a limit, a header name in another case); a value that means something
// else is one, named in the output.
func TestDiffComparesMeaning(t *testing.T) {
	const file = `upstreams:
  api:
    url: "http://127.0.0.1:22081"
    timeouts: {connect: 5s}
    auth: {type: header, header_name: X-Upstream-Key, header_value: aaaaaaaaaaaaaaaa}
server: {idle_timeout: 120s, read_header_timeout: 10s}
sessions: {secret: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, max_age: 7d}
client_ip: {trusted_proxies: [192.0.2.1, 10.0.0.0/8]}
responses: {cors: {allow_origin: "https://app.example.org", expose_headers: [Retry-After]}}
routes:
  - {name: api, path: /api/, methods: [GET, POST], upstream: api, retry_after: 10s, group: api}
route_groups: {api: {prefix: /api/}}
rules:
  - name: a
    limits: [10/1m, 100/1h]
    retry_after: 60s
    ban: 10m
    cost: header:x-cost
    key: [ip, "header:x-api-key", "expr:request.method + 'A'"]
environments:
  production: {}
  staging:
`
	for _, tc := range []struct {
		name, staging string
		differs       string // the fields named, "" for none
		thresholds    bool   // the only differences are thresholds
	}{
		{name: "durations", staging: "    server: {idle_timeout: 2m, read_header_timeout: 10000ms}\n    upstreams: {api: {timeouts: {connect: 5000ms}}}\n"},
		{name: "days as hours", staging: "    sessions: {max_age: 168h}\n"},
		{name: "retry_after and ban", staging: "    rules: [{name: a, retry_after: 1m, ban: 600s}]\n    routes: [{name: api, retry_after: \"10\"}]\n"},
		{name: "a header key in another case", staging: "    rules: [{name: a, key: [ip, \"header:X-Api-Key\", \"expr:request.method + 'A'\"]}]\n"},
		{name: "a cost header in another case", staging: "    rules: [{name: a, cost: \"header:X-COST\"}]\n"},
		{name: "header names in another case", staging: "    responses: {cors: {expose_headers: [retry-after]}}\n    upstreams: {api: {auth: {header_name: x-upstream-key}}}\n"},
		{name: "a method in lower case", staging: "    routes: [{name: api, methods: [get, POST]}]\n"},
		{name: "methods in another order", staging: "    routes: [{name: api, methods: [post, get]}]\n"},
		{name: "a method fewer", staging: "    routes: [{name: api, methods: [GET]}]\n", differs: "routes[api].methods"},
		{name: "a route group's prefix", staging: "    route_groups: {api: {prefix: /API}}\n"},
		{name: "an origin's case", staging: "    responses: {cors: {allow_origin: \"https://App.Example.org\"}}\n"},
		{name: "a trusted address as a prefix", staging: "    client_ip: {trusted_proxies: [192.0.2.1/32, 10.0.0.0/8]}\n"},
		{name: "limits written another way", staging: "    rules: [{name: a, limits: [10/60s, 100/60m]}]\n"},

		{name: "another duration", staging: "    server: {idle_timeout: 121s}\n", differs: "server.idle_timeout"},
		{name: "another retry_after", staging: "    rules: [{name: a, retry_after: 61s}]\n", differs: "rules[a].retry_after"},
		{name: "another header key", staging: "    rules: [{name: a, key: [ip, \"header:X-Api-Token\", \"expr:request.method + 'A'\"]}]\n", differs: "rules[a].key[1]"},
		{name: "an expression in another case", staging: "    rules: [{name: a, key: [ip, \"header:x-api-key\", \"expr:request.method + 'a'\"]}]\n", differs: "rules[a].key[2]"},
		{name: "the keys in another order", staging: "    rules: [{name: a, key: [\"header:x-api-key\", ip, \"expr:request.method + 'A'\"]}]\n", differs: "rules[a].key[0], rules[a].key[1]"},
		{name: "a trusted prefix of another length", staging: "    client_ip: {trusted_proxies: [192.0.2.1, 10.0.0.0/9]}\n", differs: "client_ip.trusted_proxies[1]"},
		{name: "another limit", staging: "    rules: [{name: a, limits: [10/2m, 100/1h]}]\n", thresholds: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := writeConfig(t, file+tc.staging)
			code, stdout, stderr := run(t, nil, "diff", "--config", conf, "staging", "production")
			switch {
			case tc.differs != "":
				if want := "differ in more than thresholds: " + tc.differs + "\n"; code != 1 || !strings.HasSuffix(stdout, want) {
					t.Errorf("exit %d, want 1 and %q:\n%s%s", code, want, stdout, stderr)
				}
			case tc.thresholds:
				if code != 0 || !strings.Contains(stdout, "differ only in thresholds (1)") {
					t.Errorf("exit %d, want 0 and one threshold:\n%s%s", code, stdout, stderr)
				}
			default:
				if code != 0 || stdout != "staging and production are identical\n" {
					t.Errorf("exit %d, want 0 and identical:\n%s%s", code, stdout, stderr)
				}
			}
		})
	}
}

// TestDiffPlanAndCandidateThresholds: an API client plan's limits are the
// limits of the rules that take them (limits_from: plan), and candidates
// are thresholds evaluated in shadow: staging lowering either is a
// threshold, as lowering a rule's limits is. A plan's added limit is not.
func TestDiffPlanAndCandidateThresholds(t *testing.T) {
	file := writeConfig(t, base+`api_clients:
  plans:
    free: [100/1m]
    pro: [1000/1m]
  clients: []
rules:
  - {name: per-ip, limits: [600/1m], candidates: [300/1m]}
  - {name: plans, key: [api_client], limits_from: plan}
environments:
  staging:
    api_clients:
      plans: {free: [10/1m]}
    rules:
      - {name: per-ip, limits: [60/1m], candidates: [30/1m]}
  production: {}
  wider:
    api_clients:
      plans: {pro: [1000/1m, 10000/1d]}
`)
	code, stdout, stderr := run(t, nil, "diff", "--config", file, "staging", "production")
	if code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		`api_clients.plans.free[0]                    staging: "10/1m"  production: "100/1m"  (threshold)`,
		`rules[per-ip].candidates[0]                  staging: "30/1m"  production: "300/1m"  (threshold)`,
		"differ only in thresholds (3)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = run(t, nil, "diff", "--config", file, "wider", "production")
	if want := "differ in more than thresholds: api_clients.plans.pro[1]"; code != 1 || !strings.Contains(stdout, want) {
		t.Errorf("a plan's added limit: exit %d, want 1 and %q:\n%s", code, want, stdout)
	}
}
