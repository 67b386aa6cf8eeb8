package telemetry

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
)

// TestRuleSkippedIsLoggedPerInterval: a store outage of 20,000 failed
// evaluations over 20 s (stepped on an injected clock) writes the first
// failure at once, then one line per SkipLogInterval with its count, and
// the recovery; not a line per request.
func TestRuleSkippedIsLoggedPerInterval(t *testing.T) {
	m := NewMetrics("test")
	set := &rules.Set{Rules: []*rules.Rule{{Index: 0, Name: "per-ip", Action: rules.Block}}}
	var buf strings.Builder
	d := NewDecisions(m.ForRules(set), NewLogger(&buf, "info"), LogNone, NewKeyHasher("k"))
	var now int64
	d.now = func() int64 { return now }
	req, r, storeDown := &rules.Request{}, set.Rules[0], errors.New("redis store unreachable")
	const n = 20000
	for i := range n {
		now = int64(i) * int64(time.Millisecond) // 20 s in all
		d.Observe(req, r, rules.Allowed, []byte("k"), ratelimit.Decision{}, storeDown)
	}
	d.Observe(req, r, rules.Allowed, []byte("k"), ratelimit.Decision{Allowed: true}, nil)
	type line struct {
		Level, Msg string
		Skipped    int64
	}
	var lines []line
	var total int64
	for _, s := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		lines = append(lines, l)
		if l.Msg == "rule skipped" {
			total += max(l.Skipped, 1)
		}
	}
	want := []line{
		{"WARN", "rule skipped", 0},            // the first failure, at once
		{"WARN", "rule skipped", 10000},        // at 10 s
		{"INFO", "rule evaluates again", 9999}, // the rest, with the recovery
	}
	if len(lines) != len(want) {
		t.Fatalf("%d log lines for %d failures, want %d:\n%s", len(lines), n, len(want), buf.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, lines[i], want[i])
		}
	}
	if got := total + lines[2].Skipped; got != n {
		t.Errorf("the lines count %d failures, want %d", got, n)
	}
}
