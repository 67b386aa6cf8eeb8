package respond

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/ratelimit"
)

// sfItem is an httpsfv list item in a form cmp can compare.
type sfItem struct {
	Value  any
	Params []sfParam
}

type sfParam struct {
	Name  string
	Value any
}

// parseSFList parses a field value with httpsfv, failing the test if it
// is not a valid RFC 9651 List of Items.
func parseSFList(t *testing.T, v string) []sfItem {
	t.Helper()
	l, err := httpsfv.UnmarshalList([]string{v})
	if err != nil {
		t.Fatalf("httpsfv.UnmarshalList(%q): %v", v, err)
	}
	var items []sfItem
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			t.Fatalf("%q: member %#v is not an Item", v, m)
		}
		si := sfItem{Value: it.Value}
		for _, n := range it.Params.Names() {
			pv, _ := it.Params.Get(n)
			si.Params = append(si.Params, sfParam{n, pv})
		}
		items = append(items, si)
	}
	return items
}

// marshalSFList serializes items with httpsfv.
func marshalSFList(t *testing.T, items []sfItem) string {
	t.Helper()
	var l httpsfv.List
	for _, si := range items {
		it := httpsfv.NewItem(si.Value)
		for _, p := range si.Params {
			it.Params.Add(p.Name, p.Value)
		}
		l = append(l, it)
	}
	s, err := httpsfv.Marshal(l)
	if err != nil {
		t.Fatalf("httpsfv.Marshal: %v", err)
	}
	return s
}

func TestFormatPolicy(t *testing.T) {
	for _, tt := range []struct {
		name     string
		policies []Policy
		want     []sfItem
	}{
		{
			name:     "MaveDB CSV",
			policies: []Policy{{Name: "rate-limit-csv-endpoints", Quota: 100, Window: 5 * time.Minute}},
			want:     []sfItem{{"rate-limit-csv-endpoints", []sfParam{{"q", int64(100)}, {"w", int64(300)}}}},
		},
		{
			name: "burst and sustained",
			policies: []Policy{
				{Name: "burst", Quota: 60, Window: time.Minute},
				{Name: "daily", Quota: 5000, Window: 24 * time.Hour},
			},
			want: []sfItem{
				{"burst", []sfParam{{"q", int64(60)}, {"w", int64(60)}}},
				{"daily", []sfParam{{"q", int64(5000)}, {"w", int64(86400)}}},
			},
		},
		{
			name:     "unit, no window",
			policies: []Policy{{Name: "csv builds", Quota: 4, Unit: "concurrent-requests"}},
			want:     []sfItem{{"csv builds", []sfParam{{"q", int64(4)}, {"qu", "concurrent-requests"}}}},
		},
		{
			name:     "window rounded up",
			policies: []Policy{{Name: "fast", Quota: 10, Window: 1500 * time.Millisecond}},
			want:     []sfItem{{"fast", []sfParam{{"q", int64(10)}, {"w", int64(2)}}}},
		},
		{
			name:     "zero quota",
			policies: []Policy{{Name: "closed", Quota: 0, Window: time.Second}},
			want:     []sfItem{{"closed", []sfParam{{"q", int64(0)}, {"w", int64(1)}}}},
		},
		{
			name:     "quote and backslash",
			policies: []Policy{{Name: `a "b" \c\`, Quota: 1, Window: time.Second}},
			want:     []sfItem{{`a "b" \c\`, []sfParam{{"q", int64(1)}, {"w", int64(1)}}}},
		},
		{
			name:     "all printable ASCII",
			policies: []Policy{{Name: printableASCII(), Quota: 1}},
			want:     []sfItem{{printableASCII(), []sfParam{{"q", int64(1)}}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatPolicy(tt.policies...)
			if err != nil {
				t.Fatalf("FormatPolicy(%+v): %v", tt.policies, err)
			}
			if want := marshalSFList(t, tt.want); got != want {
				t.Errorf("FormatPolicy(%+v) = %s, want what httpsfv serializes: %s", tt.policies, got, want)
			}
			if diff := cmp.Diff(parseSFList(t, got), tt.want); diff != "" {
				t.Errorf("httpsfv parse of %s (-got +want):\n%s", got, diff)
			}
		})
	}
}

func printableASCII() string {
	var b strings.Builder
	for c := byte(0x20); c <= 0x7e; c++ {
		b.WriteByte(c)
	}
	return b.String()
}

func TestFormatPolicyErrors(t *testing.T) {
	for _, tt := range []struct {
		name     string
		policies []Policy
		want     []string // substrings, one per problem
	}{
		{name: "none", want: []string{"no policies"}},
		{name: "empty name", policies: []Policy{{Quota: 1}}, want: []string{"empty"}},
		{name: "non-ASCII name", policies: []Policy{{Name: "café", Quota: 1}}, want: []string{"not printable ASCII"}},
		{name: "control character", policies: []Policy{{Name: "a\nb", Quota: 1}}, want: []string{"not printable ASCII"}},
		{name: "duplicate", policies: []Policy{{Name: "a", Quota: 1}, {Name: "a", Quota: 2}}, want: []string{"duplicate"}},
		{name: "negative quota", policies: []Policy{{Name: "a", Quota: -1}}, want: []string{"quota -1"}},
		{name: "huge quota", policies: []Policy{{Name: "a", Quota: 1e15}}, want: []string{"quota 1000000000000000"}},
		{name: "negative window", policies: []Policy{{Name: "a", Window: -time.Second}}, want: []string{"negative window"}},
		{name: "unknown unit", policies: []Policy{{Name: "a", Unit: "bytes"}}, want: []string{`unknown quota unit "bytes"`}},
		{
			name:     "every problem at once",
			policies: []Policy{{Name: "", Quota: -1}, {Name: "b", Unit: "x"}},
			want:     []string{"empty", "quota -1", `unit "x"`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FormatPolicy(tt.policies...)
			if err == nil {
				t.Fatalf("FormatPolicy(%+v) = %q, want an error", tt.policies, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("FormatPolicy(%+v) error %q does not mention %q", tt.policies, err, w)
				}
			}
		})
	}
}

func TestAppendRateLimit(t *testing.T) {
	for _, tt := range []struct {
		name      string
		policy    string
		remaining int64
		reset     int64
		want      sfItem
	}{
		{"refused", "csv", 0, 300, sfItem{"csv", []sfParam{{"r", int64(0)}, {"t", int64(300)}}}},
		{"remaining", "default", 50, 30, sfItem{"default", []sfParam{{"r", int64(50)}, {"t", int64(30)}}}},
		{"no reset", "p", 1, 0, sfItem{"p", []sfParam{{"r", int64(1)}, {"t", int64(0)}}}},
		{"negative values", "p", -3, -1, sfItem{"p", []sfParam{{"r", int64(0)}, {"t", int64(0)}}}},
		{"clamped", "p", math.MaxInt64, math.MaxInt64, sfItem{"p", []sfParam{{"r", int64(maxSFInteger)}, {"t", int64(maxSFInteger)}}}},
		{"quote and backslash", `x"y\z`, 0, 1, sfItem{`x"y\z`, []sfParam{{"r", int64(0)}, {"t", int64(1)}}}},
		{"invalid bytes replaced", "a\x00é", 0, 1, sfItem{"a???", []sfParam{{"r", int64(0)}, {"t", int64(1)}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendRateLimit(nil, tt.policy, tt.remaining, tt.reset))
			if want := marshalSFList(t, []sfItem{tt.want}); got != want {
				t.Errorf("AppendRateLimit(%q, %d, %d) = %s, want what httpsfv serializes: %s", tt.policy, tt.remaining, tt.reset, got, want)
			}
			if diff := cmp.Diff(parseSFList(t, got), []sfItem{tt.want}); diff != "" {
				t.Errorf("httpsfv parse of %s (-got +want):\n%s", got, diff)
			}
		})
	}

	// Several items in one field.
	b := AppendRateLimit(nil, "burst", 0, 10)
	b = append(b, ", "...)
	b = AppendRateLimit(b, "daily", 4000, 3600)
	want := []sfItem{
		{"burst", []sfParam{{"r", int64(0)}, {"t", int64(10)}}},
		{"daily", []sfParam{{"r", int64(4000)}, {"t", int64(3600)}}},
	}
	if got, w := string(b), marshalSFList(t, want); got != w {
		t.Errorf("two items = %s, want %s", got, w)
	}
}

func TestAppendRateLimitDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(1000, func() { buf = AppendRateLimit(buf[:0], "rate-limit-ip", 0, 300) }); n != 0 {
		t.Errorf("AppendRateLimit allocs = %v, want 0", n)
	}
}

func TestRetrySeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{
		{0, 1}, {-5 * time.Second, 1}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + time.Nanosecond, 2}, {1500 * time.Millisecond, 2},
		{299*time.Second + 900*time.Millisecond, 300}, {300 * time.Second, 300},
		{math.MaxInt64, int64(math.MaxInt64/time.Second) + 1},
	} {
		if got := RetrySeconds(tt.d); got != tt.want {
			t.Errorf("RetrySeconds(%s) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestTiming(t *testing.T) {
	for _, tt := range []struct {
		name         string
		fixed        time.Duration
		d            ratelimit.Decision
		retry, reset int64
	}{
		{"admitted, empty counter", 0, ratelimit.Decision{Allowed: true}, 0, 0},
		{"admitted, rounded up", 0, ratelimit.Decision{Allowed: true, ResetAfter: 1001 * time.Millisecond}, 0, 2},
		{"admitted, fixed has no say", 300 * time.Second, ratelimit.Decision{Allowed: true, ResetAfter: 114 * time.Second}, 0, 114},
		{"refused, computed", 0, ratelimit.Decision{RetryAfter: 116500 * time.Millisecond, ResetAfter: 113 * time.Second}, 117, 117},
		{"refused, at least 1", 0, ratelimit.Decision{RetryAfter: time.Nanosecond}, 1, 1},
		{"refused, fixed wins", 300 * time.Second, ratelimit.Decision{RetryAfter: 80300 * time.Millisecond}, 300, 300},
		{"refused, fixed wins when longer too", 30 * time.Second, ratelimit.Decision{RetryAfter: 80300 * time.Millisecond}, 30, 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			retry, reset := Timing(tt.fixed, tt.d)
			if retry != tt.retry || reset != tt.reset {
				t.Errorf("Timing(%v, %+v) = %d, %d, want %d, %d", tt.fixed, tt.d, retry, reset, tt.retry, tt.reset)
			}
		})
	}
}
