package ratelimit

import (
	"testing"
	"time"
)

func TestFormatWindow(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Minute, "5m"},
		{24 * time.Hour, "1d"},
		{36 * time.Hour, "36h"},
		{90 * time.Second, "90s"},
		{90 * time.Minute, "90m"},
		{time.Hour + 30*time.Minute + time.Second, "5401s"},
		{1500 * time.Millisecond, "1.5s"},
		{0, "0s"}, // invalid, but named in errors
	} {
		got := FormatWindow(tc.d)
		if got != tc.want {
			t.Errorf("FormatWindow(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if tc.d > 0 {
			if back, err := ParseWindow(got); err != nil || back != tc.d {
				t.Errorf("ParseWindow(%q) = %v, %v; want %v back", got, back, err, tc.d)
			}
		}
	}
}
