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
