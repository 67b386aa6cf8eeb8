package respond

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// discard is a ResponseWriter that keeps its header map between answers,
// so benchmarks measure Write rather than net/http's map growth.
type discard struct {
	h      http.Header
	status int
	n      int
}

func newDiscard() *discard { return &discard{h: make(http.Header, 16)} }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(status int)      { d.status = status }
func (d *discard) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

var _ http.ResponseWriter = (*discard)(nil)

func benchRequest(accept string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/scores", nil)
	r.Header.Set("Accept", accept)
	r.Header.Set("Accept-Language", "es-MX,es;q=0.9,en-US;q=0.8,en;q=0.7")
	r.Header.Set("Origin", "https://mavedb.org")
	return r
}

// TestWriteAllocs is the allocation budget of Write: the string holding
// the per-answer header values and the slice holding them.
func TestWriteAllocs(t *testing.T) {
	w := mustWriter(t, mavedbCORS)
	rule := mustRule(t, RuleSpec{
		Name: "rate-limit-ip", Limit: "1500/5m",
		Policies: []Policy{{Name: "rate-limit-ip", Quota: 1500, Window: 5 * time.Minute}},
	})
	// A message in languages the catalog lacks is chosen as cheaply.
	languages := mustRule(t, RuleSpec{
		Name: "rate-limit-ip", Limit: "1500/5m",
		Message:  mustMessage(t, map[string]string{"en": "x", "pt-BR": "x", "zh-Hant": "x", "es-MX": "x"}),
		Policies: []Policy{{Name: "rate-limit-ip", Quota: 1500, Window: 5 * time.Minute}},
	})
	for _, rule := range []*Rule{rule, languages} {
		for f := range numFormats {
			r := benchRequest(formatAccept[f])
			rw := newDiscard()
			a := Answer{Kind: RateLimited, Rule: rule, RetryAfter: 42 * time.Second}
			w.Write(rw, r, a) // build the template
			if n := testing.AllocsPerRun(1000, func() { w.Write(rw, r, a) }); n > 2 {
				t.Errorf("Write (%s, message %v) allocs = %v, want at most 2", formatNames[f], rule.msg.Languages(), n)
			}
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	w := mustWriter(b, mavedbCORS)
	rule := csvRule(b)
	for f := range numFormats {
		b.Run(formatNames[f], func(b *testing.B) {
			r := benchRequest(formatAccept[f])
			rw := newDiscard()
			a := Answer{Kind: RateLimited, Rule: rule, RetryAfter: 42 * time.Second}
			b.ReportAllocs()
			for b.Loop() {
				w.Write(rw, r, a)
			}
		})
	}
}

func BenchmarkWriteParallel(b *testing.B) {
	w := mustWriter(b, mavedbCORS)
	rule := csvRule(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRequest(chromeAccept)
		rw := newDiscard()
		for pb.Next() {
			w.Write(rw, r, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 42 * time.Second})
		}
	})
}

// BenchmarkPeerHTTPError is the standard library's answer, http.Error: a
// plain-text 429 with no negotiation, no Retry-After and no RateLimit.
func BenchmarkPeerHTTPError(b *testing.B) {
	rw := newDiscard()
	b.ReportAllocs()
	for b.Loop() {
		http.Error(rw, "429 Too Many Requests", http.StatusTooManyRequests)
	}
}

// BenchmarkPeerJSONProblem is the usual hand-written answer: a problem
// struct through encoding/json, headers set with Header.Set.
func BenchmarkPeerJSONProblem(b *testing.B) {
	type problem struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Status     int    `json:"status"`
		Detail     string `json:"detail"`
		RetryAfter int64  `json:"retry_after"`
	}
	rw := newDiscard()
	b.ReportAllocs()
	for b.Loop() {
		h := rw.Header()
		h.Set("Content-Type", "application/problem+json")
		h.Set("Retry-After", "42")
		h.Set("Cache-Control", "no-store")
		rw.WriteHeader(http.StatusTooManyRequests)
		_ = json.NewEncoder(rw).Encode(problem{
			Type: TypeQuotaExceeded, Title: "Too many requests", Status: 429,
			Detail: "You have sent too many requests in a short time. Please try again in 42 seconds.", RetryAfter: 42,
		})
	}
}

func BenchmarkNegotiateFormat(b *testing.B) {
	accept := []string{chromeAccept}
	b.ReportAllocs()
	for b.Loop() {
		negotiateFormat(accept)
	}
}

func BenchmarkNegotiateLanguage(b *testing.B) {
	h := []string{"es-MX,es;q=0.9,en-US;q=0.8,en;q=0.7"}
	b.ReportAllocs()
	for b.Loop() {
		negotiateLanguage(h, all, langEN)
	}
}

func BenchmarkAppendRateLimit(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRateLimit(buf[:0], "rate-limit-ip", 0, 300)
	}
}
