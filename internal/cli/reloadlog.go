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
// concurrency caps changed. A rule with limits_from: plan is compared as
// the rules it compiles to, one per plan with limits, named NAME.PLAN (as
// in metrics and logs), so that a plan's new limits are a changed rule.
func diffRules(old, next *config.Config) ruleChanges {
	// Empty lists, not nil ones: the log's JSON says [] rather than null.
	c := ruleChanges{added: []string{}, removed: []string{}, changed: []string{}}
	was, is := planRules(old), planRules(next)
	before := make(map[string]*config.Rule, len(was))
	for i := range was {
		before[was[i].Name] = &was[i]
	}
	seen := make(map[string]bool, len(is))
	for i := range is {
		r := &is[i]
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
	for i := range was {
		if !seen[was[i].Name] {
			c.removed = append(c.removed, was[i].Name)
		}
	}
	return c
}

// planRules returns c's rules with each limits_from: plan rule replaced by
// one rule per plan with limits, in plan-name order, as rules.Compile
// makes them.
func planRules(c *config.Config) []config.Rule {
	out := make([]config.Rule, 0, len(c.Rules))
	for _, r := range c.Rules {
		if r.LimitsFrom != config.LimitsFromPlan {
			out = append(out, r)
			continue
		}
		plans := c.APIClients.Plans
		names := make([]string, 0, len(plans))
		for name := range plans {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if len(plans[name]) == 0 {
				continue
			}
			pr := r
			pr.Name, pr.Limits, pr.LimitsFrom = r.Name+"."+name, plans[name], ""
			out = append(out, pr)
		}
	}
	return out
}
