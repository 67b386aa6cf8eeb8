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
