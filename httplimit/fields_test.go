package httplimit

import (
	"testing"

	"github.com/floodgate/floodgate/internal/respond"
)

var remainingTests = []struct {
	v    string
	n    int64
	ok   bool
	name string
}{
	{`"api";r=42;t=10`, 42, true, "plain"},
	{`"api";r=0;t=300`, 0, true, "zero"},
	{`"a;r=9";r=3;t=1`, 3, true, "name holding ;r="},
	{`"a\";r=9";r=5;t=1`, 5, true, "escaped quote in the name"},
	{`"api";t=10`, 0, false, "no r"},
	{`"api";r=;t=10`, 0, false, "empty r"},
	{`api;r=1`, 0, false, "not a String"},
	{`"unterminated;r=1`, 0, false, "unterminated"},
	{``, 0, false, "empty"},
	{`"api";r=999999999999999;t=1`, 999999999999999, true, "largest Integer"},
}

func TestRemainingOf(t *testing.T) {
	for _, tt := range remainingTests {
		if n, ok := remainingOf(tt.v); n != tt.n || ok != tt.ok {
			t.Errorf("%s: remainingOf(%q) = %d, %v; want %d, %v", tt.name, tt.v, n, ok, tt.n, tt.ok)
		}
	}
}

// FuzzRemainingOf checks that any field value is read without a panic, and
// that the fields respond writes are read back.
func FuzzRemainingOf(f *testing.F) {
	for _, tt := range remainingTests {
		f.Add(tt.v, "policy", int64(7))
	}
	f.Fuzz(func(t *testing.T, v, policy string, remaining int64) {
		remainingOf(v)
		if remaining < 0 || remaining > 999_999_999_999_999 {
			return
		}
		field := string(respond.AppendRateLimit(nil, policy, remaining, 1))
		if n, ok := remainingOf(field); !ok || n != remaining {
			t.Errorf("remainingOf(%q) = %d, %v; want %d", field, n, ok, remaining)
		}
	})
}
