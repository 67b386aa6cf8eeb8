package admin

import (
	"strings"
	"testing"
)

const testToken = "0123456789abcdef-admin"

// authorizationCases are bearerMatches' table against testToken, and the
// seeds of its fuzz target.
var authorizationCases = []struct {
	name string
	vv   []string
	want bool
}{
	{"canonical", []string{"Bearer " + testToken}, true},
	{"lower-case scheme", []string{"bearer " + testToken}, true},
	{"upper-case scheme", []string{"BEARER " + testToken}, true},
	{"several spaces", []string{"Bearer    " + testToken}, true},
	{"whitespace around the value", []string{"\t Bearer " + testToken + " \t"}, true},
	{"no field", nil, false},
	{"empty", []string{""}, false},
	{"scheme alone", []string{"Bearer"}, false},
	{"scheme and a space", []string{"Bearer "}, false},
	{"tab separator", []string{"Bearer\t" + testToken}, false},
	{"token with trailing junk", []string{"Bearer " + testToken + " junk"}, false},
	{"token with a suffix", []string{"Bearer " + testToken + "x"}, false},
	{"token prefix", []string{"Bearer " + testToken[:len(testToken)-1]}, false},
	{"token in another case", []string{"Bearer " + strings.ToUpper(testToken)}, false},
	{"basic scheme", []string{"Basic " + testToken}, false},
	{"no scheme", []string{testToken}, false},
	{"two fields", []string{"Bearer " + testToken, "Bearer " + testToken}, false},
	{"wrong then right", []string{"Bearer nope", "Bearer " + testToken}, false},
	{"list in one field", []string{"Bearer nope, Bearer " + testToken}, false},
	{"NUL inside", []string{"Bearer " + testToken + "\x00"}, false},
}

func TestBearerMatches(t *testing.T) {
	for _, tc := range authorizationCases {
		if got := bearerMatches(tc.vv, testToken); got != tc.want {
			t.Errorf("%s: bearerMatches(%q) = %v, want %v", tc.name, tc.vv, got, tc.want)
		}
	}
	if bearerMatches([]string{"Bearer "}, "") || bearerMatches([]string{"Bearer x"}, "") {
		t.Error("bearerMatches admits a request when no token is configured")
	}
}

// FuzzBearerMatches checks that the admin token is admitted only in a
// single Authorization value that is the Bearer scheme, in any case,
// spaces, and the token itself, give or take the whitespace around it.
func FuzzBearerMatches(f *testing.F) {
	for _, tc := range authorizationCases {
		if len(tc.vv) == 1 {
			f.Add(tc.vv[0])
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !bearerMatches([]string{v}, testToken) {
			return
		}
		scheme, rest, _ := strings.Cut(strings.Trim(v, " \t"), " ")
		if !strings.EqualFold(scheme, "Bearer") || strings.TrimLeft(rest, " ") != testToken {
			t.Fatalf("bearerMatches(%q) admits a value that is not the Bearer scheme and the token", v)
		}
	})
}

// hostCases are loopbackHost's table, and the seeds of its fuzz target:
// the names a browser on this machine reaches the admin listener by, and
// the names a page whose own name was rebound to 127.0.0.1 sends.
var hostCases = []struct {
	host string
	want bool
}{
	{"127.0.0.1:9090", true},
	{"127.0.0.1", true},
	{"127.0.0.2:9090", true}, // all of 127.0.0.0/8
	{"[::1]:9090", true},
	{"[::1]", true},
	{"localhost:9090", true},
	{"LocalHost:9090", true},
	{"localhost.:9090", true},
	{"localhost", true},
	{"[::ffff:127.0.0.1]:9090", true},
	{"", true}, // HTTP/1.0 without Host: no browser sends that
	{"rebind.attacker.example:9090", false},
	{"attacker.example", false},
	{"localhost.attacker.example:9090", false},
	{"127.0.0.1.nip.io:9090", false},
	{"localhost@attacker.example", false},
	{"127.0.0.1@attacker.example:9090", false},
	{"[fe80::1%25lo]:9090", false},
	{"[::1%lo]:9090", false},
	{"192.0.2.1:9090", false},
	{"0.0.0.0:9090", false},
	{"[::]:9090", false},
	{"2130706433:9090", false}, // 127.0.0.1 as one number: a name to a resolver, not an address
	{"0x7f.1:9090", false},
	{"127.1:9090", false},
	{"::1", false}, // a bare IPv6 address is not a Host
	{"[::1]:9090:80", false},
	{"localhost:", false},
	{"localhost:http", false},
	{"127.0.0.1:-1", false},
	{"[localhost]:9090", false},
	{" 127.0.0.1:9090", false},
	{"127.0.0.1 :9090", false},
	{"127.0.0.1\x00.attacker.example", false},
}

func TestLoopbackHost(t *testing.T) {
	for _, tc := range hostCases {
		if got := loopbackHost(tc.host); got != tc.want {
			t.Errorf("loopbackHost(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

// FuzzLoopbackHost checks that a Host admitted as loopback carries
// nothing but the name localhost or an address's digits, dots, colons and
// brackets: no other name, user part, zone, space or control byte.
func FuzzLoopbackHost(f *testing.F) {
	for _, tc := range hostCases {
		f.Add(tc.host)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !loopbackHost(host) {
			return
		}
		rest := strings.ToLower(host)
		if i := strings.Index(rest, "localhost"); i >= 0 {
			rest = rest[:i] + rest[i+len("localhost"):]
		}
		if strings.Trim(rest, "0123456789abcdef.:[]") != "" && strings.Trim(rest, "0123456789.:[]f") != "" {
			t.Fatalf("loopbackHost(%q) admits a Host that is not localhost or a loopback address", host)
		}
		if strings.ContainsAny(host, "@/% \t\x00") {
			t.Fatalf("loopbackHost(%q) admits a Host with a user part, zone, space or NUL", host)
		}
	})
}
