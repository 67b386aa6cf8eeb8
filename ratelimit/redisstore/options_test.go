package redisstore

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var parseURLTests = []struct {
	url  string
	want Options
	err  string // a part of the error; "" for none
}{
	{url: "redis://127.0.0.1:6379", want: Options{Addrs: []string{"127.0.0.1:6379"}}},
	{url: "redis://localhost", want: Options{Addrs: []string{"localhost:6379"}}},
	{url: "  redis://redis.internal:7000/3  ", want: Options{Addrs: []string{"redis.internal:7000"}, DB: 3}},
	{url: "redis://h:1/", want: Options{Addrs: []string{"h:1"}}},
	{url: "redis://:s3cret@h:6379/0", want: Options{Addrs: []string{"h:6379"}, Password: "s3cret"}},
	{url: "redis://floodgate:p%40ss%3Aw%2Fd@h:6379", want: Options{Addrs: []string{"h:6379"}, Username: "floodgate", Password: "p@ss:w/d"}},
	{url: "redis://user:p@ss@h", want: Options{Addrs: []string{"h:6379"}, Username: "user", Password: "p@ss"}},
	{url: "rediss://h.example:6380", want: Options{Addrs: []string{"h.example:6380"}, TLS: &tls.Config{}}},
	{url: "REDISS://h", want: Options{Addrs: []string{"h:6379"}, TLS: &tls.Config{}}},
	{url: "valkey://h:1", want: Options{Addrs: []string{"h:1"}}},
	{url: "valkeys://h:1", want: Options{Addrs: []string{"h:1"}, TLS: &tls.Config{}}},
	{url: "redis://[::1]:6379", want: Options{Addrs: []string{"[::1]:6379"}}},
	{url: "redis://[2001:db8::1]", want: Options{Addrs: []string{"[2001:db8::1]:6379"}}},
	{url: "redis://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000", want: Options{Addrs: []string{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"}}},
	{url: "rediss://:pw@n1:7000,n2,[::1]:7002/0", want: Options{Addrs: []string{"n1:7000", "n2:6379", "[::1]:7002"}, Password: "pw", TLS: &tls.Config{}}},
	{url: "redis://h?timeout=50ms&key_prefix=app1:&cache_size=1000", want: Options{Addrs: []string{"h:6379"}, Timeout: 50 * time.Millisecond, KeyPrefix: "app1:", CacheSize: 1000}},
	{url: "redis://h/2?cache_size=0", want: Options{Addrs: []string{"h:6379"}, DB: 2, CacheSize: -1}},
	{url: "redis://h?key_prefix=a%2Fb", want: Options{Addrs: []string{"h:6379"}, KeyPrefix: "a/b"}},

	{url: "", err: "must start with redis://"},
	{url: "localhost:6379", err: "must start with redis://"},
	{url: "http://h", err: `scheme "http"`},
	{url: "memory://", err: `scheme "memory"`},
	{url: "redis://", err: "no host"},
	{url: "redis:///0", err: "no host"},
	{url: "redis://user@h", err: "USER:PASSWORD@"},
	{url: "redis://:p%zz@h", err: "password has a bad %-escape"},
	{url: "redis://u%zz:p@h", err: "user name has a bad %-escape"},
	{url: "redis://h:0", err: "port"},
	{url: "redis://h:65536", err: "port"},
	{url: "redis://h:+1", err: "port"},
	{url: "redis://h:", err: "port"},
	{url: "redis://h:http", err: "port"},
	{url: "redis://::1", err: "not HOST:PORT"},
	{url: "redis://[::1", err: "brackets"},
	{url: "redis://[127.0.0.1]:1", err: "not an IPv6 address"},
	{url: "redis://[fe80::1%25eth0]:1", err: "not an IPv6 address"},
	{url: "redis://h%20x:1", err: "not a host name"},
	{url: "redis://a:1,,b:2", err: `address ""`},
	{url: "redis://a:1,b:2/1", err: "cluster has only database 0"},
	{url: "redis://h/x", err: "must be /DB"},
	{url: "redis://h/-1", err: "must be /DB"},
	{url: "redis://h/1/2", err: "must be /DB"},
	{url: "redis://h/99999999999", err: "must be /DB"},
	{url: "redis://h#frag", err: "fragment"},
	{url: "redis://h?db=1", err: `"db" is unknown (allowed: timeout, key_prefix, cache_size)`},
	{url: "redis://h?timeout=1s&timeout=2s", err: "given 2 times"},
	{url: "redis://h?timeout=fast", err: "timeout"},
	{url: "redis://h?timeout=-1s", err: "timeout"},
	{url: "redis://h?key_prefix=", err: "key_prefix"},
	{url: "redis://h?key_prefix=%7Bx%7D", err: "key_prefix"},
	{url: "redis://h?cache_size=-1", err: "cache_size"},
	{url: "redis://h?cache_size=+5", err: "cache_size"},
	{url: "redis://h?%zz", err: "query"},
}

func TestParseURL(t *testing.T) {
	for _, tt := range parseURLTests {
		got, err := ParseURL(tt.url)
		switch {
		case tt.err != "" && err == nil:
			t.Errorf("ParseURL(%q) = %+v, want an error mentioning %q", tt.url, got, tt.err)
		case tt.err != "" && !strings.Contains(err.Error(), tt.err):
			t.Errorf("ParseURL(%q) error %q, want it to mention %q", tt.url, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParseURL(%q) error: %v", tt.url, err)
		case tt.err == "":
			if diff := cmp.Diff(got, tt.want, cmpopts.IgnoreUnexported(tls.Config{})); diff != "" {
				t.Errorf("ParseURL(%q) (-got +want):\n%s", tt.url, diff)
			}
			if _, err := New(got); err != nil {
				t.Errorf("New(ParseURL(%q)): %v", tt.url, err)
			}
		}
	}
}

// TestParseURLErrorsHidePassword checks that no error quotes a password.
func TestParseURLErrorsHidePassword(t *testing.T) {
	for _, u := range []string{
		"redis://:hunter2@h:0", "redis://:hunter2@h/x", "redis://:hunter2@h?x=1",
		"redis://:hunter2@a:1,b:2/1", "redis://:hunter2@", "redis://u:hunter2@h#f",
		// A "/" or "?" in the password, not %-encoded, ends the authority
		// inside it.
		"redis://:hunter2/q1w2e3+Zz@127.0.0.1:6379", "redis://:hunter2?q@h:1", "redis://u:hunter2/x@a:1,b:2/0",
	} {
		if _, err := ParseURL(u); err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseURL(%q) error %v, want an error without the password", u, err)
		}
	}
}

func TestOptionsString(t *testing.T) {
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Addrs: []string{"h:6379"}}, "redis://h:6379"},
		{Options{Addrs: []string{"h:6379"}, Password: "hunter2"}, "redis://:xxxxx@h:6379"},
		{Options{Addrs: []string{"a:1", "b:2"}, Username: "u", Password: "p", TLS: &tls.Config{}}, "rediss://u:xxxxx@a:1,b:2"},
		{Options{Addrs: []string{"h:1"}, DB: 2, Timeout: time.Second, KeyPrefix: "x:", CacheSize: -1}, "redis://h:1/2?cache_size=0&key_prefix=x%3A&timeout=1s"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.o, got, tt.want)
		}
	}
}

// FuzzParseURL checks that ParseURL never panics, that what it accepts
// New accepts too, that its errors never quote the password, and that
// formatting the result parses back to the same Options.
func FuzzParseURL(f *testing.F) {
	for _, tt := range parseURLTests {
		f.Add(tt.url)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseURL(s)
		if err != nil {
			if o.Password != "" && len(o.Password) > 3 && strings.Contains(err.Error(), o.Password) {
				t.Errorf("ParseURL(%q) error %q contains the password", s, err)
			}
			return
		}
		if _, err := o.validate(); err != nil {
			t.Errorf("ParseURL(%q) = %+v, which New refuses: %v", s, o, err)
		}
		again, err := ParseURL(o.format(false))
		if err != nil {
			t.Fatalf("ParseURL(%q) = %+v, formatted as %q, which does not parse: %v", s, o, o.format(false), err)
		}
		if diff := cmp.Diff(again, o, cmpopts.IgnoreUnexported(tls.Config{})); diff != "" {
			t.Errorf("ParseURL(%q) then format and parse again (-again +first):\n%s", s, diff)
		}
		if o.Password != "" && strings.Contains(o.String(), ":"+o.Password+"@") && o.Password != "xxxxx" {
			t.Errorf("String() = %q shows the password", o.String())
		}
	})
}
