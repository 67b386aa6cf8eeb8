package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplyDefaults(t *testing.T) {
	c := Config{
		ClientIP:  ClientIP{Header: "forwarded"},
		Upstreams: map[string]Upstream{"api": {URL: "http://127.0.0.1:8081"}},
		Rules: []Rule{
			{Name: "block", Limits: []string{"1/s"}},
			{Name: "count", Action: "count", Limits: []string{"1/s"}},
			{Name: "deny", Action: "deny"},
			{Name: "allow", Action: "allow", When: "request.internal"},
			{Name: "keyed", Key: []string{"session"}, Algorithm: "gcra", Limits: []string{"1/s"}},
		},
	}
	c.ApplyDefaults()
	want := Config{
		Mode:   "enforce",
		Listen: "127.0.0.1:8080",
		Server: Server{ReadHeaderTimeout: "10s", IdleTimeout: "120s", ShutdownGrace: "30s", Engine: "floodgate",
			MaxBodyBytes: 10 << 20, MaxURIBytes: 8 << 10, BodyReadTimeout: "60s", WriteIdleTimeout: "60s", RequestBufferBytes: 64 << 10, MaxHeaderBytes: 65536},
		Admin:    Admin{Listen: "127.0.0.1:9090"},
		ClientIP: ClientIP{Header: "Forwarded", IPv6Prefix: 64, IPv4Prefix: 32},
		Store:    Store{URL: "memory", MaxKeys: 1 << 20, Timeout: "100ms", FailurePolicy: "fail_open"},
		Upstreams: map[string]Upstream{
			"api": {URL: "http://127.0.0.1:8081"},
		},
		Routes: []Route{{Name: "default", Path: "/", Upstream: "api"}},
		Rules: []Rule{
			{Name: "block", When: "true", Action: "block", Key: []string{"ip"}, Algorithm: "sliding_window", Limits: []string{"1/s"}},
			{Name: "count", When: "true", Action: "count", Key: []string{"ip"}, Algorithm: "sliding_window", Limits: []string{"1/s"}},
			{Name: "deny", When: "true", Action: "deny"},
			{Name: "allow", When: "request.internal", Action: "allow"},
			{Name: "keyed", When: "true", Action: "block", Key: []string{"session"}, Algorithm: "gcra", Limits: []string{"1/s"}},
		},
		Responses: Responses{RateLimitHeaders: "always"},
		Log:       Log{Level: "info", Decisions: "limited", Access: "none"},
		Reload:    Reload{Settle: "2s"},
	}
	if diff := cmp.Diff(c, want); diff != "" {
		t.Errorf("ApplyDefaults (-got +want):\n%s", diff)
	}
	again := c.clone()
	again.ApplyDefaults()
	if diff := cmp.Diff(again, c); diff != "" {
		t.Errorf("ApplyDefaults twice (-got +want):\n%s", diff)
	}
}

func TestApplyDefaultsRoutes(t *testing.T) {
	tests := []struct {
		name string
		c    Config
		want []Route
	}{
		{name: "no upstream", c: Config{}, want: nil},
		{
			name: "two upstreams",
			c:    Config{Upstreams: map[string]Upstream{"a": {}, "b": {}}},
			want: nil,
		},
		{
			name: "routes given",
			c:    Config{Upstreams: map[string]Upstream{"a": {}}, Routes: []Route{{Name: "x", Path: "/x", Upstream: "a", Methods: []string{"get", "Post"}}}},
			want: []Route{{Name: "x", Path: "/x", Upstream: "a", Methods: []string{"GET", "POST"}}},
		},
	}
	for _, tt := range tests {
		tt.c.ApplyDefaults()
		if diff := cmp.Diff(tt.c.Routes, tt.want); diff != "" {
			t.Errorf("%s: ApplyDefaults routes (-got +want):\n%s", tt.name, diff)
		}
	}
}

// TestValidateLeavesConfig: Validate applies defaults to a copy only.
func TestValidateLeavesConfig(t *testing.T) {
	f, err := Load("testdata/valid/full.yaml", "", lookupIn(fixtureEnv))
	if err != nil {
		t.Fatal(err)
	}
	before := f.Config.clone()
	if probs := f.Validate(); len(probs) > 0 {
		t.Fatalf("Validate: %v", probs)
	}
	if diff := cmp.Diff(f.Config, before); diff != "" {
		t.Errorf("Validate changed the config (-got +want):\n%s", diff)
	}
	if f.Config.Routes[0].Methods[0] != "get" {
		t.Errorf("methods = %q, want them as written", f.Config.Routes[0].Methods)
	}
}

// TestValidateOnce: a field with a load problem is not reported again.
func TestValidateOnce(t *testing.T) {
	doc := `
store:
  max_keys: lots
upstreams: [api]
rules:
  - name: a
    limits: [abc/5m]
    retry_after: [300]
`
	f, err := Parse("once.yaml", []byte(doc), "", nil)
	if err == nil {
		t.Fatal("Parse = no error, want problems")
	}
	got := append(err.(Problems), f.Validate()...).Error()
	want := `once.yaml:3: store.max_keys: expected an integer, found "lots"
once.yaml:4: upstreams: expected a mapping, found a list
once.yaml:7: rules[0].limits[0]: limit "abc/5m": count "abc" is not a positive integer
once.yaml:8: rules[0].retry_after: expected a string, found a list`
	if got != want {
		t.Errorf("problems =\n%s\nwant\n%s", got, want)
	}
}

// TestValidateAccepts: edge values that are valid.
func TestValidateAccepts(t *testing.T) {
	for _, doc := range []string{
		"listen: :8080",
		"listen: '[::]:443'",
		"admin: {listen: 'off'}",
		"admin: {listen: '127.0.0.1:0'}\nlisten: '127.0.0.1:0'",
		"client_ip: {header: x-forwarded-for}",
		"client_ip: {header: FORWARDED}",
		"client_ip: {ipv4_prefix: 8, ipv6_prefix: 128}",
		"client_ip: {ipv4_prefix: 32, ipv6_prefix: 16}",
		"client_ip: {trusted_hops: 32}",
		"store: {max_keys: 1024}",
		"store: {max_keys: 268435456}",
		"responses: {cors: {allow_origin: 'http://localhost:3000'}}",
		"responses: {cors: {allow_origin: 'https://[::1]'}}",
		"rules: [{name: a.b_c-9, limits: [1/1ms]}]",
		"rules: [{name: '" + strings.Repeat("a", 64) + "', limits: [1/s]}]",
		"rules: [{name: a, limits: ['4294967295/1d']}]",
		"rules: [{name: a, limits: [10/1s, 600/1m, 10000/1h, 100000/1d]}]",
		"rules: [{name: a, action: count, limits: [1/s], retry_after: 1s, message: hi}]",
		"rules: [{name: a, action: deny, message: {en: no, zh-Hant-TW: no}}]",
		"upstreams: {x: {url: 'HTTPS://Example.org:443/base/'}}",
	} {
		full := doc
		if !strings.Contains(doc, "upstreams:") {
			full += "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
		}
		f, err := Parse("ok.yaml", []byte(full), "", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", doc, err)
			continue
		}
		if probs := f.Validate(); len(probs) > 0 {
			t.Errorf("Validate(%q):\n%v", doc, probs)
		}
	}
}

// validateBothWays validates f as loaded, and again after its Config had
// its defaults applied, as the CLI's load does before the gateway
// validates: the problems must not depend on that order.
func validateBothWays(t *testing.T, f *File) Problems {
	t.Helper()
	first := f.Validate()
	f.Config.ApplyDefaults()
	second := f.Validate()
	if diff := cmp.Diff(second.Error(), first.Error()); diff != "" {
		t.Errorf("Validate after ApplyDefaults differs from Validate before it (-after +before):\n%s", diff)
	}
	return second
}

// TestValidateWrittenZero: a 0 or "" the file writes is a value, checked
// like any other, whether or not the defaults were applied first; a key
// left empty, or a variable that expands to nothing, takes the default.
func TestValidateWrittenZero(t *testing.T) {
	const base = "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
	const secret = "secret: '0123456789012345678901234567890123', "
	vars := map[string]string{"ZERO": "0", "EMPTY": ""}
	tests := []struct {
		name string
		doc  string
		env  string
		want string // "" for no problem
	}{
		{name: "max_body_bytes 0", doc: "server: {max_body_bytes: 0}",
			want: "t.yaml:1: server.max_body_bytes: 0 is out of range: must be from 1 to 1099511627776"},
		{name: "max_body_bytes -0", doc: "server: {max_body_bytes: -0}",
			want: "t.yaml:1: server.max_body_bytes: 0 is out of range: must be from 1 to 1099511627776"},
		{name: "max_body_bytes 0x0", doc: "server: {max_body_bytes: 0x0}",
			want: "t.yaml:1: server.max_body_bytes: 0 is out of range: must be from 1 to 1099511627776"},
		{name: "max_body_bytes from a variable set to 0", doc: "server: {max_body_bytes: \"${ZERO}\"}",
			want: "t.yaml:1: server.max_body_bytes: 0 is out of range: must be from 1 to 1099511627776"},
		{name: "max_uri_bytes 0", doc: "server: {max_uri_bytes: 0}",
			want: "t.yaml:1: server.max_uri_bytes: 0 is out of range: must be from 256 to 65536"},
		{name: "request_buffer_bytes 0", doc: "server: {request_buffer_bytes: 0}",
			want: "t.yaml:1: server.request_buffer_bytes: 0 is out of range: must be from 4096 to 1073741824"},
		{name: "max_header_bytes 0", doc: "server: {max_header_bytes: 0}",
			want: "t.yaml:1: server.max_header_bytes: 0 is out of range: must be from 1024 to 1048576"},
		{name: "ipv4_prefix 0", doc: "client_ip: {ipv4_prefix: 0}",
			want: "t.yaml:1: client_ip.ipv4_prefix: 0 is out of range: must be from 8 to 32"},
		{name: "ipv6_prefix 0", doc: "client_ip: {ipv6_prefix: 0}",
			want: "t.yaml:1: client_ip.ipv6_prefix: 0 is out of range: must be from 16 to 128"},
		{name: "max_keys 0", doc: "store: {max_keys: 0}",
			want: "t.yaml:1: store.max_keys: 0 is out of range: must be from 1024 to 268435456"},
		{name: "max_addresses 0", doc: "sessions: {" + secret + "per_ip: {max_addresses: 0}}",
			want: "t.yaml:1: sessions.per_ip.max_addresses: 0 is out of range: must be from 1 to 16777216"},
		{name: "when empty", doc: "rules: [{name: a, action: deny, when: ''}]",
			want: `t.yaml:1: rules[0].when: the condition is blank; leave "when" out to match every request`},
		{name: "when empty on a second rule", doc: "rules: [{name: a, limits: [1/s]}, {name: b, action: deny, when: \"\"}]",
			want: `t.yaml:1: rules[1].when: the condition is blank; leave "when" out to match every request`},
		{name: "algorithm empty", doc: "rules: [{name: a, limits: [1/s], algorithm: ''}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "" (allowed: sliding_window, gcra, fixed_window)`},
		{name: "algorithm token_bucket", doc: "rules: [{name: a, limits: [1/s], algorithm: token_bucket}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "token_bucket": gcra is the token bucket (and the leaky bucket of nginx limit_req): write algorithm: gcra (allowed: sliding_window, gcra, fixed_window)`},
		{name: "algorithm Token-Bucket", doc: "rules: [{name: a, limits: [1/s], algorithm: Token-Bucket}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "Token-Bucket": gcra is the token bucket (and the leaky bucket of nginx limit_req): write algorithm: gcra (allowed: sliding_window, gcra, fixed_window)`},
		{name: "algorithm sliding_log", doc: "rules: [{name: a, limits: [1/s], algorithm: sliding_log}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "sliding_log": write algorithm: sliding_window (allowed: sliding_window, gcra, fixed_window)`},
		{name: "algorithm fixed", doc: "rules: [{name: a, limits: [1/s], algorithm: fixed}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "fixed": write algorithm: fixed_window (allowed: sliding_window, gcra, fixed_window)`},
		{name: "algorithm unknown", doc: "rules: [{name: a, limits: [1/s], algorithm: magic}]",
			want: `t.yaml:1: rules[0].algorithm: unknown algorithm "magic" (allowed: sliding_window, gcra, fixed_window)`},
		{name: "mode empty", doc: "mode: ''",
			want: `t.yaml:1: mode: unknown mode "" (allowed: enforce, log-only)`},
		{name: "store timeout empty", doc: "store: {timeout: ''}",
			want: `t.yaml:1: store.timeout: "" is not a duration such as 10s, 5m, 1h or 1d`},
		{name: "issue_when empty", doc: "sessions: {" + secret + "issue_when: ''}",
			want: "t.yaml:1: sessions.issue_when: the condition is blank; leave issue_when out to issue on every GET"},
		{name: "a route's settings empty",
			doc: "routes: [{name: a, path: /, upstream: api, timeout_status: 0, retry_after: '', trailing_slash: '', request_buffering: '', query: {max: {n: 5}, over_max: ''}}]",
			want: "t.yaml:1: routes[0].query.over_max: unknown over_max value \"\" (allowed: reject, drop)\n" +
				"t.yaml:1: routes[0].request_buffering: unknown request_buffering value \"\" (allowed: on, off)\n" +
				"t.yaml:1: routes[0].retry_after: retry_after \"\" is not a duration such as 300s or 5m, nor a number of seconds\n" +
				"t.yaml:1: routes[0].timeout_status: 0 is not a timeout status (allowed: 503, 504)\n" +
				"t.yaml:1: routes[0].trailing_slash: unknown trailing_slash value \"\" (allowed: exact, optional)"},
		{name: "a route's settings left out", doc: "routes: [{name: a, path: /, upstream: api, timeout_status: ~, retry_after: , trailing_slash: \"${EMPTY}\", query: {over_max: ~}}]"},
		{name: "a rule's failure_policy empty", doc: "rules: [{name: r, limits: [10/1m], failure_policy: ''}]",
			want: `t.yaml:1: rules[0].failure_policy: unknown failure policy "" (allowed: fail_open, fail_closed)`},
		{name: "an environment writes 0", env: "production",
			doc:  "server: {max_body_bytes: 100}\nenvironments:\n  production:\n    server: {max_body_bytes: 0}",
			want: "t.yaml:4: server.max_body_bytes: 0 is out of range: must be from 1 to 1099511627776"},

		{name: "left empty", doc: "server: {max_body_bytes: }\nclient_ip:\n  ipv4_prefix:"},
		{name: "null", doc: "server: {max_body_bytes: ~, max_header_bytes: null}\nrules: [{name: a, action: deny, when: ~}]"},
		{name: "a variable that expands to nothing", doc: "server: {max_body_bytes: \"${EMPTY}\"}\nstore: {max_keys: \"${UNSET:-}\"}"},
		{name: "an environment unsets it", env: "production",
			doc: "server: {max_body_bytes: 0}\nenvironments:\n  production:\n    server: {max_body_bytes: ~}"},
		{name: "zero where zero is allowed", doc: "server: {max_connections: 0}\nclient_ip: {trusted_hops: 0}\nsessions: {" + secret + "per_ip: {max_new: 0}}"},
		{name: "the default written out", doc: "server: {max_body_bytes: 10485760}\nrules: [{name: a, action: deny, when: 'true'}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tt.doc+base), tt.env, lookupIn(vars))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.doc, err)
			}
			got := validateBothWays(t, f).Error()
			if got != tt.want {
				t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
			}
		})
	}
}

// An upstream's settings written as "" are checked as written, as the
// other settings' are.
func TestValidateWrittenEmptyUpstream(t *testing.T) {
	f, err := Parse("t.yaml", []byte("upstreams: {api: {url: 'http://127.0.0.1:8081', connection_reuse: '', timeouts: {connect: ''}}}"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "t.yaml:1: upstreams.api.connection_reuse: unknown connection reuse mode \"\" (allowed: shared, per_client, none)\n" +
		"t.yaml:1: upstreams.api.timeouts.connect: \"\" is not a duration such as 10s, 5m, 1h or 1d"
	if got := validateBothWays(t, f).Error(); got != want {
		t.Errorf("Validate =\n%s\nwant\n%s", got, want)
	}
}

// TestValidateDurations: each duration setting has its own range, and
// every one takes the units of a rule's windows, days included.
func TestValidateDurations(t *testing.T) {
	const secret = "secret: '0123456789012345678901234567890123'"
	tests := []struct {
		doc  string
		want string // "" for no problem
	}{
		{doc: "sessions: {" + secret + ", max_age: 24h}"},
		{doc: "sessions: {" + secret + ", max_age: 1d}"},
		{doc: "sessions: {" + secret + ", max_age: 400d}"},
		{doc: "sessions: {" + secret + ", max_age: 1s}"},
		{doc: "sessions: {" + secret + ", max_age: 401d}", want: `t.yaml:1: sessions.max_age: "401d" must be from 1s to 400d`},
		{doc: "sessions: {" + secret + ", max_age: 500ms}", want: `t.yaml:1: sessions.max_age: "500ms" must be from 1s to 400d`},
		{doc: "sessions: {" + secret + ", max_age: a day}", want: `t.yaml:1: sessions.max_age: "a day" is not a duration such as 10s, 5m, 1h or 1d`},
		{doc: "sessions: {" + secret + ", per_ip: {window: 24h}}"},
		{doc: "sessions: {" + secret + ", per_ip: {window: 366d}}"},
		{doc: "sessions: {" + secret + ", per_ip: {window: 367d}}", want: `t.yaml:1: sessions.per_ip.window: "367d" must be from 1s to 366d`},
		{doc: "sessions: {" + secret + ", per_ip: {window: 0s}}", want: `t.yaml:1: sessions.per_ip.window: "0s" must be from 1s to 366d`},
		{doc: "server: {idle_timeout: 1h, shutdown_grace: 1ms}"},
		{doc: "server: {idle_timeout: 2h}", want: `t.yaml:1: server.idle_timeout: "2h" must be from 1ms to 1h`},
		{doc: "server: {read_header_timeout: 1d}", want: `t.yaml:1: server.read_header_timeout: "1d" must be from 1ms to 1h`},
		{doc: "store: {timeout: 0s}", want: `t.yaml:1: store.timeout: "0s" must be from 1ms to 1h`},
		{doc: "reload: {settle: 1d}", want: `t.yaml:1: reload.settle: "1d" must be from 1ms to 1h`},
		{doc: "routes: [{name: a, path: /, upstream: api, timeouts: {total: 1d}}]", want: `t.yaml:1: routes[0].timeouts.total: "1d" must be from 1ms to 1h`},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 1d}]"},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 366d}]"},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 1s}]"},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 0s}]", want: `t.yaml:1: rules[0].ban: ban "0s" must be from 1s to 366d`},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 367d}]", want: `t.yaml:1: rules[0].ban: ban "367d" must be from 1s to 366d`},
		{doc: "rules: [{name: a, limits: [1/1d], ban: -1d}]", want: `t.yaml:1: rules[0].ban: ban "-1d" must be from 1s to 366d`},
		{doc: "rules: [{name: a, limits: [1/1d], ban: 999ms}]", want: `t.yaml:1: rules[0].ban: ban "999ms" must be from 1s to 366d`},
		{doc: "rules: [{name: a, limits: [1/1d], ban: soon}]", want: `t.yaml:1: rules[0].ban: ban "soon" is not a duration such as 10s, 5m, 1h or 1d`},
		{doc: "rules: [{name: a, limits: [1/1d], retry_after: 1d}]"},
	}
	for _, tt := range tests {
		doc := tt.doc + "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
		f, err := Parse("t.yaml", []byte(doc), "", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.doc, err)
			continue
		}
		if got := f.Validate().Error(); got != tt.want {
			t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
		}
	}
}

// TestValidateDecideOff: decide.protocol is checked whether or not the
// listener is on, so that a misspelt protocol fails the CI run that has
// the listener off (the examples' ${FLOODGATE_DECIDE_LISTEN:-off}), not
// the production start that turns it on.
func TestValidateDecideOff(t *testing.T) {
	const rest = "\nclient_ip: {trusted_proxies: [127.0.0.1]}\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
	on := map[string]string{"FLOODGATE_DECIDE_LISTEN": "127.0.0.1:8083"}
	tests := []struct {
		name string
		doc  string
		vars map[string]string
		want string // "" for no problem
	}{
		{name: "off from the variable's default", doc: `decide: {listen: "${FLOODGATE_DECIDE_LISTEN:-off}", protocol: ngnix}`,
			want: `t.yaml:1: decide.protocol: "ngnix" is not nginx, forwarded or envoy`},
		{name: "on from the variable", doc: `decide: {listen: "${FLOODGATE_DECIDE_LISTEN:-off}", protocol: ngnix}`, vars: on,
			want: `t.yaml:1: decide.protocol: "ngnix" is not nginx, forwarded or envoy`},
		{name: "off", doc: "decide: {listen: 'off', protocol: NGINX}",
			want: `t.yaml:1: decide.protocol: "NGINX" is not nginx, forwarded or envoy`},
		{name: "no listen", doc: "decide: {protocol: ' nginx'}",
			want: `t.yaml:1: decide.protocol: " nginx" is not nginx, forwarded or envoy`},
		{name: "empty listen", doc: "decide: {listen: '', protocol: haproxy}",
			want: `t.yaml:1: decide.protocol: "haproxy" is not nginx, forwarded or envoy`},

		{name: "off with a good protocol", doc: `decide: {listen: "${FLOODGATE_DECIDE_LISTEN:-off}", protocol: envoy}`},
		{name: "off without a protocol", doc: "decide: {listen: 'off'}"},
		{name: "on with a good protocol", doc: `decide: {listen: "${FLOODGATE_DECIDE_LISTEN:-off}", protocol: forwarded}`, vars: on},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tt.doc+rest), "", lookupIn(tt.vars))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.doc, err)
			}
			if got := f.Validate().Error(); got != tt.want {
				t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
			}
		})
	}
}

// TestValidateSessionsOff: without a secret, sessions settings are a
// problem, and their values are checked all the same, so that one run
// reports every problem.
func TestValidateSessionsOff(t *testing.T) {
	tests := []struct {
		doc  string
		want string // "" for no problem
	}{
		{doc: "sessions: {secret: '${UNSET:-}'}"},
		{doc: "sessions: {}"},
		{doc: "sessions: {cookie: ovSession}",
			want: "t.yaml:1: sessions.secret: sessions need a signing secret of at least 32 bytes, such as secret: ${HMAC_SIGNING_SECRET} (make one with `openssl rand -base64 48`)"},
		{doc: "sessions:\n  secret: '${UNSET:-}'\n  cookie: ov session\n  max_age: a day\n  per_ip: {window: 0s, max_new: -1}",
			want: "t.yaml:2: sessions.secret: sessions need a signing secret of at least 32 bytes, such as secret: ${HMAC_SIGNING_SECRET} (make one with `openssl rand -base64 48`)\n" +
				"t.yaml:3: sessions.cookie: \"ov session\" is not a cookie name (letters, digits and !#$%&'*+-.^_`|~)\n" +
				"t.yaml:4: sessions.max_age: \"a day\" is not a duration such as 10s, 5m, 1h or 1d\n" +
				"t.yaml:5: sessions.per_ip.max_new: -1 is out of range: must be from 0 to 1073741824\n" +
				"t.yaml:5: sessions.per_ip.window: \"0s\" must be from 1s to 366d"},
	}
	for _, tt := range tests {
		doc := tt.doc + "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
		f, err := Parse("t.yaml", []byte(doc), "", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.doc, err)
			continue
		}
		if got := f.Validate().Error(); got != tt.want {
			t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
		}
	}
}

// TestValidateInternalEvaluateRules: evaluate_rules without an internal
// listener written is a problem; with the listener switched off (from the
// environment: FLOODGATE_INTERNAL_LISTEN=off) it waits for the listener.
func TestValidateInternalEvaluateRules(t *testing.T) {
	tests := []struct {
		doc  string
		want string // "" for no problem
	}{
		{doc: "internal: {evaluate_rules: true}",
			want: "t.yaml:1: internal.evaluate_rules: has no meaning without internal.listen"},
		{doc: "internal: {listen: '${UNSET:-}', evaluate_rules: true}",
			want: "t.yaml:1: internal.evaluate_rules: has no meaning without internal.listen"},
		{doc: "internal: {listen: 'off', evaluate_rules: true}"},
		{doc: "internal: {listen: '${LISTEN}', evaluate_rules: true}"},
		{doc: "internal: {listen: '127.0.0.1:8082', evaluate_rules: true}"},
	}
	env := func(k string) (string, bool) {
		if k == "LISTEN" {
			return "off", true
		}
		return "", false
	}
	for _, tt := range tests {
		doc := tt.doc + "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
		f, err := Parse("t.yaml", []byte(doc), "", env)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.doc, err)
			continue
		}
		if got := f.Validate().Error(); got != tt.want {
			t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
		}
	}
}

// TestValidateUpstreamsWithoutRoutes: only a lone upstream gets a default
// route, so two or more without routes would answer every request 404.
func TestValidateUpstreamsWithoutRoutes(t *testing.T) {
	const want2 = "upstreams api and web, but no routes: only a lone upstream gets a default route, so every request would be answered 404; add routes, such as routes: [{name: api, path: \"/api/{rest...}\", upstream: api}, {name: web, path: /, upstream: web}]"
	tests := []struct {
		doc  string
		want string // "" for no problem
	}{
		{doc: "upstreams:\n  web: {url: 'http://127.0.0.1:8082'}\n  api: {url: 'http://127.0.0.1:8081'}",
			want: "t.yaml:1: upstreams: " + want2},
		{doc: "upstreams:\n  web: {url: 'http://127.0.0.1:8082'}\n  api: {url: 'http://127.0.0.1:8081'}\nroutes: []",
			want: "t.yaml:4: routes: " + want2},
		{doc: "upstreams:\n  web: {url: 'http://127.0.0.1:8082'}\n  api: {url: 'http://127.0.0.1:8081'}\nroutes: ~",
			want: "t.yaml:1: upstreams: " + want2},
		{doc: "upstreams: {a: {url: 'http://127.0.0.1:1'}, b: {url: 'http://127.0.0.1:2'}, c: {url: 'http://127.0.0.1:3'}}",
			want: "t.yaml:1: upstreams: upstreams a, b and c, but no routes: only a lone upstream gets a default route, so every request would be answered 404; add routes, such as routes: [{name: a, path: \"/a/{rest...}\", upstream: a}, {name: b, path: /, upstream: b}]"},

		{doc: "upstreams: {api: {url: 'http://127.0.0.1:8081'}}"},
		{doc: "upstreams: {api: {url: 'http://127.0.0.1:8081'}}\nroutes: []"},
		{doc: "upstreams: {api: {url: 'http://127.0.0.1:8081'}, web: {url: 'http://127.0.0.1:8082'}}\nroutes: [{name: web, path: /, upstream: web}]"},
	}
	for _, tt := range tests {
		f, err := Parse("t.yaml", []byte(tt.doc), "", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.doc, err)
			continue
		}
		if got := validateBothWays(t, f).Error(); got != tt.want {
			t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
		}
	}
}

// TestValidateRouteGroups: a group's problems name what is allowed, never
// the empty group of the routes that have none, and a missing prefix is
// required rather than a malformed path.
func TestValidateRouteGroups(t *testing.T) {
	const ups = "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}, web: {url: 'http://127.0.0.1:8082'}}"
	const routes = "\nroutes:\n  - {name: a, path: /api/, group: api, upstream: api}\n  - {name: w, path: /, upstream: web}"
	tests := []struct {
		doc  string
		want string // "" for no problem
	}{
		{doc: "route_groups: {web: {prefix: /web/}, api: {prefix: /api/}}" + routes,
			want: `t.yaml:1: route_groups.web: no route is in group "web": every path under its prefix would be answered 404 (allowed: api)`},
		{doc: "route_groups: {web: {prefix: /web/}}\nroutes: [{name: a, path: /api/, upstream: api}, {name: w, path: /, upstream: web}]",
			want: `t.yaml:1: route_groups.web: no route is in group "web": every path under its prefix would be answered 404`},
		{doc: "route_groups: {api: {}}" + routes,
			want: "t.yaml:1: route_groups.api.prefix: a route group needs a prefix, such as /api/"},
		{doc: "route_groups: {api: {prefix: ''}}" + routes,
			want: "t.yaml:1: route_groups.api.prefix: a route group needs a prefix, such as /api/"},
		{doc: "route_groups: {api: {prefix: ~}}" + routes,
			want: "t.yaml:1: route_groups.api.prefix: a route group needs a prefix, such as /api/"},
		{doc: "route_groups: {api: ~}" + routes,
			want: "t.yaml:1: route_groups.api.prefix: a route group needs a prefix, such as /api/"},
		{doc: "route_groups: {api: {prefix: api}}" + routes,
			want: `t.yaml:1: route_groups.api.prefix: path "api" must start with /`},

		{doc: "route_groups: {api: {prefix: /api}}" + routes},
	}
	for _, tt := range tests {
		f, err := Parse("t.yaml", []byte(tt.doc+ups), "", nil)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.doc, err)
			continue
		}
		if got := f.Validate().Error(); got != tt.want {
			t.Errorf("Validate(%q) =\n%s\nwant\n%s", tt.doc, got, tt.want)
		}
	}
}

// TestSharedListen: which listener before another has its address, what
// never counts as shared, and the problem naming that one listener.
func TestSharedListen(t *testing.T) {
	for _, tc := range []struct {
		c                     Config
		field, other, problem string
	}{
		{Config{Listen: "127.0.0.1:8080", Admin: Admin{Listen: "127.0.0.1:8080"}}, "admin.listen", "listen",
			`"127.0.0.1:8080" is also the public listen address`},
		{Config{Listen: ":0", Admin: Admin{Listen: ":0"}}, "admin.listen", "", ""},
		{Config{Listen: "127.0.0.1:8080", Admin: Admin{Listen: ListenOff}, Internal: Internal{Listen: ListenOff}}, "internal.listen", "", ""},
		{Config{Listen: "127.0.0.1:8080", Admin: Admin{Listen: "127.0.0.1:9090"}, Internal: Internal{Listen: "127.0.0.1:9090"}}, "internal.listen", "admin.listen",
			`"127.0.0.1:9090" is also the admin listen address`},
		{Config{Listen: "127.0.0.1:8080", Internal: Internal{Listen: "127.0.0.1:8080"}}, "internal.listen", "listen",
			`"127.0.0.1:8080" is also the public listen address`},
		{Config{Internal: Internal{Listen: "unix:/run/f.sock"}, Decide: Decide{Listen: "unix:/run/f.sock"}}, "decide.listen", "", ""},
		{Config{Listen: "127.0.0.1:8083", Decide: Decide{Listen: "127.0.0.1:8083"}}, "decide.listen", "listen",
			`"127.0.0.1:8083" is also the public listen address`},
		{Config{Listen: "127.0.0.1:8080", Admin: Admin{Listen: "127.0.0.1:8083"}, Decide: Decide{Listen: "127.0.0.1:8083"}}, "decide.listen", "admin.listen",
			`"127.0.0.1:8083" is also the admin listen address`},
		{Config{Listen: "127.0.0.1:8080", Internal: Internal{Listen: "127.0.0.1:8083"}, Decide: Decide{Listen: "127.0.0.1:8083"}}, "decide.listen", "internal.listen",
			`"127.0.0.1:8083" is also the internal listen address`},
		{Config{Listen: "127.0.0.1:8080", Admin: Admin{Listen: "127.0.0.1:8080"}}, "listen", "", ""}, // the later one is reported
	} {
		other, problem := SharedListen(&tc.c, tc.field)
		if other != tc.other || problem != tc.problem {
			t.Errorf("SharedListen(%+v, %q) = %q, %q, want %q, %q", tc.c, tc.field, other, problem, tc.other, tc.problem)
		}
	}
}
