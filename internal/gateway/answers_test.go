package gateway_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
)

// loggedRetry returns the retry_after_s of the last decision line the
// gateway logged for rule with decision, or -1.
func loggedRetry(t *testing.T, h *harness, rule, decision string) float64 {
	t.Helper()
	got := -1.0
	for _, line := range strings.Split(h.logs.String(), "\n") {
		var e struct {
			Msg, Rule, Decision string
			Retry               *float64 `json:"retry_after_s"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.Msg != "decision" || e.Rule != rule || e.Decision != decision {
			continue
		}
		if e.Retry == nil {
			t.Fatalf("decision line without retry_after_s: %s", line)
		}
		got = *e.Retry
	}
	return got
}

// explained returns what explain says of rule for a request from ip.
func explained(t *testing.T, h *harness, path, ip, rule string) gateway.ExplainedRule {
	t.Helper()
	req, err := admin.ExplainRequest{Method: "GET", Path: path, Headers: admin.ExplainHeaders{"X-Forwarded-For": {ip}}, IP: "127.0.0.1"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range h.g.Explain(t.Context(), req).Rules {
		if r.Name == rule {
			return r
		}
	}
	t.Fatalf("explain names no rule %q", rule)
	return gateway.ExplainedRule{}
}

func deref(p *int64) string {
	if p == nil {
		return "absent"
	}
	return strconv.FormatInt(*p, 10)
}

// TestAnswersAgree: the RateLimit field's t, Retry-After, the decision
// log and explain say the same, for a rule with a fixed retry_after
// (MaveDB's 300) and for one whose wait the limiter computes; a fresh
// request's t is within the policy's window; and a client that waits the
// Retry-After it was sent is admitted.
func TestAnswersAgree(t *testing.T) {
	const csvRule = "rate-limit-csv-endpoints"
	// 186.5s into the 5-minute window 10:00–10:05.
	const into = 186500 * time.Millisecond

	t.Run("fixed", func(t *testing.T) {
		h := newHarness(t, mavedb, behindLB, nil)
		h.clock.Add(into)
		// A fresh counter: the window ends in 113.5s, t 114 (not 414,
		// when the one request would be forgotten).
		resp, _ := h.do("GET", listPath, clientA)
		if got, want := resp.Header.Get("Ratelimit"), `"rate-limit-ip";r=1499;t=114`; got != want {
			t.Errorf("fresh request: RateLimit %q, want %q (w=300)", got, want)
		}
		if got := h.repeat(100, "GET", csvPath, clientA); got[200] != 100 {
			t.Fatalf("100 CSV requests: %v", got)
		}
		resp, _ = h.do("GET", csvPath, clientA)
		if resp.StatusCode != 429 {
			t.Fatalf("CSV request 101: status %d", resp.StatusCode)
		}
		// The limiter would admit in 116.5s; the rule says 300, and so
		// does every part of the answer.
		if got := resp.Header.Get("Retry-After"); got != "300" {
			t.Errorf("Retry-After %q, want 300", got)
		}
		if got, want := resp.Header.Get("Ratelimit"), `"`+csvRule+`";r=0;t=300`; got != want {
			t.Errorf("RateLimit %q, want %q", got, want)
		}
		if got := loggedRetry(t, h, csvRule, "blocked"); got != 300 {
			t.Errorf("decision log retry_after_s %v, want 300 (what the client was sent)", got)
		}
		ex := explained(t, h, csvPath, clientA, csvRule)
		if ex.Decision != "blocked" || deref(ex.RetryAfter) != "300" || deref(ex.Reset) != "300" {
			t.Errorf("explain: %s, retry_after_s %s, reset_s %s; want blocked, 300, 300", ex.Decision, deref(ex.RetryAfter), deref(ex.Reset))
		}
	})

	t.Run("computed", func(t *testing.T) {
		h := newHarness(t, mavedb, behindLB, func(c *config.Config) {
			for i := range c.Rules {
				if c.Rules[i].Name == csvRule {
					c.Rules[i].RetryAfter = ""
				}
			}
		})
		h.clock.Add(into)
		if got := h.repeat(100, "GET", csvPath, clientA); got[200] != 100 {
			t.Fatalf("100 CSV requests: %v", got)
		}
		ex := explained(t, h, csvPath, clientA, csvRule)
		resp, _ := h.do("GET", csvPath, clientA)
		if resp.StatusCode != 429 {
			t.Fatalf("CSV request 101: status %d", resp.StatusCode)
		}
		// 113.5s to the window's end, then 3s until the 100 weigh 99.
		if got := resp.Header.Get("Retry-After"); got != "117" {
			t.Errorf("Retry-After %q, want 117", got)
		}
		if got, want := resp.Header.Get("Ratelimit"), `"`+csvRule+`";r=0;t=117`; got != want {
			t.Errorf("RateLimit %q, want %q", got, want)
		}
		if got := loggedRetry(t, h, csvRule, "blocked"); got != 117 {
			t.Errorf("decision log retry_after_s %v, want 117 (what the client was sent)", got)
		}
		if ex.Decision != "blocked" || deref(ex.RetryAfter) != "117" || deref(ex.Reset) != "117" {
			t.Errorf("explain: %s, retry_after_s %s, reset_s %s; want blocked, 117, 117", ex.Decision, deref(ex.RetryAfter), deref(ex.Reset))
		}
		h.clock.Add(117 * time.Second)
		if resp, _ := h.do("GET", csvPath, clientA); resp.StatusCode != 200 {
			t.Errorf("after waiting Retry-After: status %d, want 200", resp.StatusCode)
		}
	})
}
