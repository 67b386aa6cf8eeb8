package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExplainShowsCaps: a rule's concurrency caps are shown, in text and
// JSON, and a rule without limits has no counter, so no remaining.
func TestExplainShowsCaps(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		text       string         // the rule's line after its decision
		json       map[string]any // the members of its JSON besides name, action, reached, matched, key_hash, decision
	}{
		{
			name: "a cap only",
			rule: "{name: r, key: [], max_inflight: 4}",
			text: "key global (H), in flight at most 4",
			json: map[string]any{"key_type": "global", "max_inflight": 4.0, "in_flight": 0.0},
		},
		{
			name: "a cap per key only",
			rule: "{name: r, max_inflight_per_key: 2}",
			text: "key ip (H), in flight at most 2 per key",
			json: map[string]any{"key_type": "ip", "max_inflight_per_key": 2.0, "in_flight_per_key": 0.0},
		},
		{
			name: "both caps and a limit",
			rule: "{name: r, limits: [10/1m], max_inflight: 8, max_inflight_per_key: 2}",
			text: "key ip (H), limit 10/1m, in flight at most 8, in flight at most 2 per key, remaining 10",
			json: map[string]any{"key_type": "ip", "limits": []any{"10/1m"}, "max_inflight": 8.0, "max_inflight_per_key": 2.0, "in_flight": 0.0, "in_flight_per_key": 0.0, "remaining": 10.0, "reset_s": 0.0},
		},
		{
			name: "a limit only",
			rule: "{name: r, limits: [10/1m]}",
			text: "key ip (H), limit 10/1m, remaining 10",
			json: map[string]any{"key_type": "ip", "limits": []any{"10/1m"}, "remaining": 10.0, "reset_s": 0.0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, base+"rules:\n  - "+tc.rule+"\n")
			code, stdout, stderr := run(t, nil, "explain", "--config", file, "GET", "/x")
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			line := ""
			for l := range strings.SplitSeq(stdout, "\n") {
				if _, rest, ok := strings.Cut(l, " 1. r "); ok {
					line = strings.Join(strings.Fields(rest), " ")
				}
			}
			// The key's hash is another's each run.
			if i, j := strings.Index(line, "("), strings.Index(line, ")"); i >= 0 && j > i {
				line = line[:i+1] + "H" + line[j:]
			}
			if want := "block allowed " + tc.text; line != want {
				t.Errorf("explain's line\n%q, want\n%q\n%s", line, want, stdout)
			}

			_, stdout, _ = run(t, nil, "explain", "--config", file, "--json", "GET", "/x")
			var ex struct{ Rules []map[string]any }
			if err := json.Unmarshal([]byte(stdout), &ex); err != nil || len(ex.Rules) != 1 {
				t.Fatalf("explain --json: %v\n%s", err, stdout)
			}
			got := ex.Rules[0]
			for _, k := range []string{"name", "action", "reached", "matched", "key_hash", "decision"} {
				delete(got, k)
			}
			if diff := cmp.Diff(got, tc.json); diff != "" {
				t.Errorf("explain --json's rule (-got +want):\n%s", diff)
			}
		})
	}
}
