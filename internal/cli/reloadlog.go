package cli

import (
	"slices"

	"github.com/floodgate/floodgate/internal/config"
)

// ruleChanges are the differences between the rules of two
// configurations, by rule name, for the reload's log line.
type ruleChanges struct {
	added, removed, changed []string
}

// diffRules compares the rules of the running configuration (old) with
// those of the one being applied (next): rules added, removed, and those
// whose limits, condition, key, action, algorithm, cost, count_when or
// concurrency caps changed.
func diffRules(old, next *config.Config) ruleChanges {
	// Empty lists, not nil ones: the log's JSON says [] rather than null.
	c := ruleChanges{added: []string{}, removed: []string{}, changed: []string{}}
	before := make(map[string]*config.Rule, len(old.Rules))
	for i := range old.Rules {
		before[old.Rules[i].Name] = &old.Rules[i]
	}
	seen := make(map[string]bool, len(next.Rules))
	for i := range next.Rules {
		r := &next.Rules[i]
		seen[r.Name] = true
		o, ok := before[r.Name]
		switch {
		case !ok:
			c.added = append(c.added, r.Name)
		case !slices.Equal(o.Limits, r.Limits) || o.LimitsFrom != r.LimitsFrom || o.When != r.When ||
			!slices.Equal(o.Key, r.Key) || o.Action != r.Action || o.Algorithm != r.Algorithm ||
			o.Cost != r.Cost || o.CountWhen != r.CountWhen ||
			o.MaxInflight != r.MaxInflight || o.MaxInflightPerKey != r.MaxInflightPerKey:
			c.changed = append(c.changed, r.Name)
		}
	}
	for i := range old.Rules {
		if !seen[old.Rules[i].Name] {
			c.removed = append(c.removed, old.Rules[i].Name)
		}
	}
	return c
}
