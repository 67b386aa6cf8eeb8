package ratelimit

import (
	"strings"
	"testing"
)

// parseLimitErrorTests are limits written as people say them, and what
// ParseLimit answers: the fix itself when the intent is plain, the form
// otherwise.
var parseLimitErrorTests = []struct {
	in, want string // want: the error's text, or "" when in parses
}{
	{"100/minute", `limit "100/minute": window "minute" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/1m`},
	{"100/Minute", `limit "100/Minute": window "Minute" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/1m`},
	{"100/5 minutes", `limit "100/5 minutes": window "5 minutes" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/5m`},
	{"100/1 hour", `limit "100/1 hour": window "1 hour" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/1h`},
	{"100/2days", `limit "100/2days": window "2days" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/2d`},
	{"100/sec", `limit "100/sec": window "sec" is not a positive duration (such as 1s, 5m, 1h, 1d): write 100/1s`},
	{"100 per 5m", `limit "100 per 5m" is not N/WINDOW: write 100/5m`},
	{"100 per minute", `limit "100 per minute" is not N/WINDOW: write 100/1m`},
	{" 60 per 10 seconds ", `limit " 60 per 10 seconds " is not N/WINDOW: write 60/10s`},
	// No fix to give: the form, or the range.
	{"100 per 0s", `limit "100 per 0s" is not N/WINDOW (for example 100/5m)`},
	{"100 per 400 days", `limit "100 per 400 days" is not N/WINDOW (for example 100/5m)`},
	{"0 per 5m", `limit "0 per 5m" is not N/WINDOW (for example 100/5m)`},
	{"100 per", `limit "100 per" is not N/WINDOW (for example 100/5m)`},
	{"100", `limit "100" is not N/WINDOW (for example 100/5m)`},
	{"100/0s", `limit "100/0s": window "0s" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
	{"100/0 minutes", `limit "100/0 minutes": window "0 minutes" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
	{"100/5x", `limit "100/5x": window "5x" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
	{"100/-5 minutes", `limit "100/-5 minutes": window "-5 minutes" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
	{"100/99999999999 minutes", `limit "100/99999999999 minutes": window "99999999999 minutes" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
	{"100/m", ""},
	{"100/5m", ""},
}

func TestParseLimitErrorsSayTheFix(t *testing.T) {
	for _, tc := range parseLimitErrorTests {
		_, err := ParseLimit(tc.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("ParseLimit(%q) error = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParseLimit: ParseLimit never panics, and a fix it suggests parses.
func FuzzParseLimit(f *testing.F) {
	for _, tc := range parseLimitErrorTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := ParseLimit(s)
		if err == nil {
			return
		}
		if _, fix, ok := strings.Cut(err.Error(), ": write "); ok {
			if _, err := ParseLimit(fix); err != nil {
				t.Errorf("ParseLimit(%q) suggests %q, which does not parse: %v", s, fix, err)
			}
		}
	})
}
