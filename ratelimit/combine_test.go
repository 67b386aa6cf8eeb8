package ratelimit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCombine(t *testing.T) {
	allow := func(rem int64) Decision { return Decision{Allowed: true, Remaining: rem, ResetAfter: time.Minute} }
	refuse := func(retry time.Duration) Decision { return Decision{RetryAfter: retry, ResetAfter: time.Hour} }
	at := func(d Decision, i int) Decision { d.Limit = i; return d }
	tests := []struct {
		name string
		ds   []Decision
		want Decision
	}{
		{"one", []Decision{at(allow(5), 7)}, allow(5)},
		{"least remaining", []Decision{allow(5), allow(3), allow(4)}, at(allow(3), 1)},
		{"tie keeps first", []Decision{allow(3), allow(3)}, allow(3)},
		{"refusal beats remaining", []Decision{allow(0), refuse(time.Second)}, at(refuse(time.Second), 1)},
		{"first refusal, longest wait", []Decision{allow(9), refuse(2 * time.Second), allow(0), refuse(5 * time.Second)},
			at(refuse(5*time.Second), 1)},
		{"later refusal shorter", []Decision{refuse(5 * time.Second), refuse(time.Second)}, refuse(5 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Decision
			for i, d := range tt.ds {
				got = Combine(got, i, d)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Combine (-got +want):\n%s", diff)
			}
		})
	}
}

func TestValidateWindowBounds(t *testing.T) {
	tests := []struct {
		l    Limit
		want bool
	}{
		{Limit{Count: 1, Window: MaxWindow}, true},
		{Limit{Count: 1, Window: MaxWindow + time.Millisecond}, false},
		{Limit{Count: int64(MaxWindow / time.Millisecond), Window: MaxWindow, Algorithm: GCRA}, true},
		{Limit{Count: 1000001, Window: time.Millisecond, Algorithm: GCRA}, false},
		{Limit{Count: 1000000, Window: time.Millisecond, Algorithm: GCRA}, true},
		{Limit{Count: MaxWindowCount + 1, Window: time.Hour}, false},
		{Limit{Count: MaxWindowCount + 1, Window: time.Hour, Algorithm: GCRA}, true},
	}
	for _, tt := range tests {
		err := tt.l.Validate()
		if (err == nil) != tt.want {
			t.Errorf("%+v.Validate() = %v, want valid %v", tt.l, err, tt.want)
		}
		if tt.l.valid() != (err == nil) {
			t.Errorf("%+v: valid() = %v disagrees with Validate() = %v", tt.l, tt.l.valid(), err)
		}
	}
}

// TestValidateMessages: the error names the window as the limit is
// written ("400d", as ParseLimit reads it), not as hours.
func TestValidateMessages(t *testing.T) {
	tests := []struct {
		l    Limit
		want string
	}{
		{Limit{Count: 1, Window: 400 * 24 * time.Hour}, "window 400d must be at most 366d"},
		{Limit{Count: 1, Window: MaxWindow + time.Hour}, "window 8785h must be at most 366d"},
		{Limit{Count: 1, Window: -time.Minute}, "window -1m must be at least 1ms"},
		{Limit{Count: 1, Window: 500 * time.Microsecond}, "window 500µs must be at least 1ms"},
		{Limit{Count: 1, Window: 1500 * time.Microsecond}, "window 1.5ms must be a whole number of milliseconds"},
		{Limit{Count: 0, Window: time.Minute}, "count 0 must be positive"},
	}
	for _, tt := range tests {
		if err := tt.l.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("%+v.Validate() = %v, want %q", tt.l, err, tt.want)
		}
	}
}
