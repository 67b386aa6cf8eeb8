package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/internal/respond"
	"github.com/floodgate/floodgate/ratelimit"
)

// gatewayRule builds a rule's answers the way internal/gateway.New does
// from a configuration's rule (name, limits, retry_after, message).
func gatewayRule(t *testing.T, name string, limits []ratelimit.Limit, retryAfter time.Duration, message map[string]string) *respond.Rule {
	t.Helper()
	spec := respond.RuleSpec{Name: name, RetryAfter: retryAfter}
	for _, l := range limits {
		spec.Limits = append(spec.Limits, l.String())
		n := name
		if len(limits) > 1 {
			n += "-" + ratelimit.FormatWindow(l.Window)
		}
		spec.Policies = append(spec.Policies, respond.Policy{Name: n, Quota: l.Count, Window: l.Window})
	}
	if len(message) > 0 {
		m, err := respond.CompileMessage(message)
		if err != nil {
			t.Fatal(err)
		}
		spec.Message = m
	}
	r, err := respond.NewRule(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// response is what a test compares: status, every header, body.
type response struct {
	Status int
	Header http.Header
	Body   string
}

func responseOf(rec *httptest.ResponseRecorder) response {
	return response{rec.Code, rec.Header(), rec.Body.String()}
}

// TestAnswersMatchGateway checks that the middleware's answers are the
// gateway's, byte for byte, for the same rule: for each case, the same
// requests go through the middleware and through a second memory store
// on the same clock, and the gateway's answer is written by
// respond.Writer from that store's Decision, with the Writer and Rule
// built as internal/gateway builds them from a configuration.
func TestAnswersMatchGateway(t *testing.T) {
	bulkMessage := map[string]string{"": "Use the bulk archive at https://zenodo.org/communities/mavedb. Try again in {retry_after_human}."}
	cases := []struct {
		name       string
		limits     []ratelimit.Limit
		retryAfter time.Duration
		message    map[string]string
		opts       httplimit.Options // and the gateway's equivalent:
		writer     respond.Options
	}{
		{
			name:   "rate-limit-ip",
			limits: []ratelimit.Limit{lim(3, 5*time.Minute)},
		},
		{ // MaveDB's CSV rule, with its CORS headers, fixed Retry-After and message
			name:       "rate-limit-csv-endpoints",
			limits:     []ratelimit.Limit{lim(3, 5*time.Minute)},
			retryAfter: 300 * time.Second,
			message:    bulkMessage,
			opts:       httplimit.Options{CORS: httplimit.CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}}},
			writer:     respond.Options{CORS: respond.CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}}},
		},
		{ // burst and daily limits, GCRA; the daily one refuses first (Decision.Limit 1)
			name:   "api",
			limits: []ratelimit.Limit{{Count: 5, Window: time.Minute, Algorithm: ratelimit.GCRA}, {Count: 3, Window: 24 * time.Hour, Algorithm: ratelimit.GCRA}},
			opts:   httplimit.Options{CORS: httplimit.CORS{AllowOrigins: []string{"https://mavedb.org"}}},
			writer: respond.Options{CORS: respond.CORS{AllowOrigins: []string{"https://mavedb.org"}}},
		},
		{ // responses.ratelimit_headers: never, Spanish by default
			name:   "fixed",
			limits: []ratelimit.Limit{{Count: 3, Window: time.Hour, Algorithm: ratelimit.FixedWindow}},
			opts:   httplimit.Options{RateLimitFields: httplimit.FieldsNever, DefaultLanguage: "es"},
			writer: respond.Options{OmitRateLimitFields: true, DefaultLanguage: "es"},
		},
	}
	// The refused request, in every format and language.
	refused := []request{
		{},
		{header: http.Header{"Accept": {"application/json"}}},
		{header: http.Header{"Accept": {"text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"}, "Accept-Language": {"es-MX,es;q=0.9"}}},
		{header: http.Header{"Accept": {"text/plain"}, "Accept-Language": {"en"}, "Origin": {"https://mavedb.org"}}},
		{header: http.Header{"Origin": {"https://example.org"}}},
		{method: http.MethodHead},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			l := mustNew(t, newMemory(c), tc.opts)
			r := mustRule(t, l, httplimit.RuleSpec{Name: tc.name, Limits: tc.limits, RetryAfter: tc.retryAfter, Message: tc.message})
			h := r.Wrap(&ok{})

			gw, err := respond.NewWriter(tc.writer)
			if err != nil {
				t.Fatal(err)
			}
			gwRule := gatewayRule(t, tc.name, tc.limits, tc.retryAfter, tc.message)
			gwStore := newMemory(c)

			// Admitted: the gateway's RateLimit fields on a forwarded response.
			for i := range 3 {
				c.Advance(time.Second)
				rec := serve(h, request{})
				d, err := gwStore.Take(ctx, "192.0.2.1", 1, tc.limits...)
				if err != nil || !d.Allowed || rec.Code != 200 {
					t.Fatalf("request %d: middleware %d, gateway store %+v, %v", i, rec.Code, d, err)
				}
				want := http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
				if tc.opts.RateLimitFields == httplimit.FieldsAlways {
					want["Ratelimit-Policy"] = []string{gwRule.PolicyField()}
					_, reset := gwRule.Timing(d)
					want["Ratelimit"] = []string{string(respond.AppendRateLimit(nil, gwRule.PolicyName(d.Limit), d.Remaining, reset))}
				}
				if diff := cmp.Diff(rec.Header(), want); diff != "" {
					t.Errorf("admitted request %d: headers (-got +want):\n%s", i, diff)
				}
			}

			// Refused: the gateway's 429.
			for _, rq := range refused {
				c.Advance(time.Second)
				got := serve(h, rq)
				d, err := gwStore.Take(ctx, "192.0.2.1", 1, tc.limits...)
				if err != nil || d.Allowed {
					t.Fatalf("gateway store: %+v, %v; want a refusal", d, err)
				}
				want := httptest.NewRecorder()
				gw.Write(want, rq.build(), respond.Answer{Kind: respond.RateLimited, Rule: gwRule,
					RetryAfter: d.RetryAfter, Limit: d.Limit, Remaining: d.Remaining})
				if diff := cmp.Diff(responseOf(got), responseOf(want)); diff != "" {
					t.Errorf("refused %+v: (-got +want):\n%s", rq, diff)
				}
				if got.Code != http.StatusTooManyRequests || got.Header().Get("Retry-After") == "" {
					t.Errorf("refused %+v: %d, Retry-After %q", rq, got.Code, got.Header().Get("Retry-After"))
				}
			}

			// Store down, fail closed: the 503 answer for the rule.
			lc := mustNew(t, &errStore{}, tc.opts)
			rc := mustRule(t, lc, httplimit.RuleSpec{Name: tc.name, Limits: tc.limits, RetryAfter: tc.retryAfter,
				Message: tc.message, OnStoreError: httplimit.FailClosed})
			for _, rq := range refused {
				got := serve(rc.Wrap(&ok{}), rq)
				want := httptest.NewRecorder()
				gw.Write(want, rq.build(), respond.Answer{Kind: respond.Unavailable, Rule: gwRule, RetryAfter: httplimit.DefaultFailClosedRetryAfter})
				if diff := cmp.Diff(responseOf(got), responseOf(want)); diff != "" {
					t.Errorf("store down %+v: (-got +want):\n%s", rq, diff)
				}
			}
		})
	}
}

// TestAnswerExample pins one complete answer, MaveDB's CSV rule to curl,
// as docs/answers.md shows it.
func TestAnswerExample(t *testing.T) {
	c := newClock()
	l := mustNew(t, newMemory(c), httplimit.Options{CORS: httplimit.CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}}})
	r := mustRule(t, l, httplimit.RuleSpec{
		Name:       "rate-limit-csv-endpoints",
		Limits:     []ratelimit.Limit{lim(1, 5*time.Minute)},
		RetryAfter: 300 * time.Second,
		Message:    map[string]string{"": "Use the bulk archive at https://zenodo.org/communities/mavedb. Try again in {retry_after_human}."},
	})
	h := r.Wrap(&ok{})
	serve(h, request{})
	rec := serve(h, request{header: http.Header{"Accept": {"*/*"}}})
	want := response{
		Status: 429,
		Header: http.Header{
			"Access-Control-Allow-Origin":   {"*"},
			"Access-Control-Expose-Headers": {"Retry-After"},
			"Cache-Control":                 {"no-store"},
			"Content-Language":              {"en"},
			"Content-Length":                {"329"},
			"Content-Type":                  {"application/problem+json; charset=utf-8"},
			"Ratelimit":                     {`"rate-limit-csv-endpoints";r=0;t=300`},
			"Ratelimit-Policy":              {`"rate-limit-csv-endpoints";q=1;w=300`},
			"Retry-After":                   {"300"},
			"Vary":                          {"Accept, Accept-Language"},
			"X-Content-Type-Options":        {"nosniff"},
		},
		Body: `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too many requests","status":429,` +
			`"detail":"Use the bulk archive at https://zenodo.org/communities/mavedb. Try again in 5 minutes.",` +
			`"rule":"rate-limit-csv-endpoints","violated-policies":["rate-limit-csv-endpoints"],"limit":"1/5m","retry_after":300}` + "\n",
	}
	if diff := cmp.Diff(responseOf(rec), want); diff != "" {
		t.Errorf("answer (-got +want):\n%s", diff)
	}
}
