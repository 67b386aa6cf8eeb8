package rules

import (
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

func TestNeedsResponse(t *testing.T) {
	for _, tc := range []struct {
		rule config.Rule
		want bool
	}{
		{config.Rule{Name: "limit", Limits: []string{"10/1m"}}, false},
		{config.Rule{Name: "cost-requests", Limits: []string{"10/1m"}, Cost: config.CostRequests}, false},
		{config.Rule{Name: "deny", Action: config.ActionDeny}, false},
		{config.Rule{Name: "cap", MaxInflight: 4}, true},
		{config.Rule{Name: "cap-per-key", MaxInflightPerKey: 1}, true},
		{config.Rule{Name: "count-when", Limits: []string{"10/1m"}, CountWhen: "response.status >= 500"}, true},
		{config.Rule{Name: "blank-count-when", Limits: []string{"10/1m"}, CountWhen: "  "}, false},
		{config.Rule{Name: "seconds", Limits: []string{"900/1h"}, Cost: config.CostUpstreamSeconds}, true},
		{config.Rule{Name: "bytes", Limits: []string{"1000000/1h"}, Cost: config.CostResponseBytes}, true},
	} {
		if got := NeedsResponse(&tc.rule); (got != "") != tc.want {
			t.Errorf("NeedsResponse(%s) = %q, want a reason: %v", tc.rule.Name, got, tc.want)
		}
	}
}
