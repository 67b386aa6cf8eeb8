package config

import "testing"

func TestRedacted(t *testing.T) {
	c := Config{
		Admin:     Admin{Token: "0123456789abcdef"},
		Store:     Store{URL: "redis://user:hunter2@10.0.0.1:6379/0"},
		Upstreams: map[string]Upstream{"api": {URL: "http://127.0.0.1:8081"}},
		Rules:     []Rule{{Name: "r", Message: Message{"": "hello"}}},
	}
	r := Redacted(c)
	if r.Admin.Token != "[redacted]" {
		t.Errorf("token = %q", r.Admin.Token)
	}
	if r.Store.URL != "redis://user:xxxxx@10.0.0.1:6379/0" {
		t.Errorf("store url = %q", r.Store.URL)
	}
	if r.Upstreams["api"].URL != "http://127.0.0.1:8081" || r.Rules[0].Message[""] != "hello" {
		t.Errorf("non-secrets changed: %+v", r)
	}
	if c.Admin.Token != "0123456789abcdef" || c.Store.URL != "redis://user:hunter2@10.0.0.1:6379/0" {
		t.Errorf("Redacted changed its argument: %+v", c)
	}
	if got := Redacted(Config{}); got.Admin.Token != "" {
		t.Errorf("empty secret became %q", got.Admin.Token)
	}
}
