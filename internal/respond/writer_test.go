package respond

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/build"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// checkJSON decodes a problem+json body, failing the test if it is not a
// JSON object.
func checkJSON(t testing.TB, body string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

func mustWriter(t testing.TB, o Options) *Writer {
	t.Helper()
	w, err := NewWriter(o)
	if err != nil {
		t.Fatalf("NewWriter(%+v): %v", o, err)
	}
	return w
}

func mustRule(t testing.TB, spec RuleSpec) *Rule {
	t.Helper()
	r, err := NewRule(spec)
	if err != nil {
		t.Fatalf("NewRule(%+v): %v", spec, err)
	}
	return r
}

func mustMessage(t testing.TB, texts map[string]string) *Message {
	t.Helper()
	m, err := CompileMessage(texts)
	if err != nil {
		t.Fatalf("CompileMessage(%q): %v", texts, err)
	}
	return m
}

// csvRule is MaveDB's rate-limit-csv-endpoints (seed 004): 100 per 5
// minutes, 429 with Retry-After: 300 and a body pointing to the bulk
// archive.
func csvRule(t testing.TB) *Rule {
	return mustRule(t, RuleSpec{
		Name:       "rate-limit-csv-endpoints",
		Limit:      "100/5m",
		RetryAfter: 300 * time.Second,
		Message: mustMessage(t, map[string]string{
			"en": "Too many CSV downloads ({limit} per client). Use the bulk archive at https://example.org/mavedb/bulk instead.",
			"es": "Demasiadas descargas CSV ({limit} por cliente). Use el archivo completo en https://example.org/mavedb/bulk.",
		}),
		Policies: []Policy{{Name: "rate-limit-csv-endpoints", Quota: 100, Window: 5 * time.Minute}},
	})
}

// mavedbCORS is the seed's CORS on 429s.
var mavedbCORS = Options{CORS: CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}}}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, w *Writer, method string, header map[string]string, a Answer) response {
	t.Helper()
	r := httptest.NewRequest(method, "/scores", nil)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	w.Write(rec, r, a)
	res := response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	if method != http.MethodHead {
		if got, want := res.header.Get("Content-Length"), strconv.Itoa(len(res.body)); got != want {
			t.Errorf("Content-Length = %s, want %s", got, want)
		}
	}
	return res
}

// dump renders a response for a golden file: status, sorted headers, body.
func (r response) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d\n", r.status)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.header {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, v := range r.header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.WriteString(r.body)
	return b.String()
}

var formatAccept = [numFormats]string{formatJSON: "application/json", formatText: "text/plain", formatHTML: firefoxAccept}

func TestGolden(t *testing.T) {
	w := mustWriter(t, mavedbCORS)
	rules := map[string]*Rule{"csv": csvRule(t), "catalog": nil}
	for name, rule := range rules {
		for l := range lang(numLangs) {
			for f := range numFormats {
				file := filepath.Join("testdata", fmt.Sprintf("429-%s.%s.%s.golden", name, catalogs[l].tag, formatNames[f]))
				t.Run(file, func(t *testing.T) {
					res := do(t, w, http.MethodGet, map[string]string{
						"Accept":          formatAccept[f],
						"Accept-Language": catalogs[l].tag + "-XX," + catalogs[l].tag + ";q=0.9",
					}, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 90 * time.Second})
					got := res.dump()
					if *update {
						if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
							t.Fatal(err)
						}
						return
					}
					want, err := os.ReadFile(file)
					if err != nil {
						t.Fatalf("%v (run go test -update to create it)", err)
					}
					if diff := cmp.Diff(got, string(want)); diff != "" {
						t.Errorf("%s (-got +want):\n%s", file, diff)
					}
				})
			}
		}
	}
}

func TestWriteKinds(t *testing.T) {
	w := mustWriter(t, Options{})
	for _, tt := range []struct {
		kind       Kind
		status     int
		typ        string
		retryAfter string
	}{
		{RateLimited, 429, TypeQuotaExceeded, "1"},
		{Denied, 403, TypeBlank, ""},
		{Unavailable, 503, TypeTemporaryReducedCapacity, "1"},
		{BadGateway, 502, TypeBlank, ""},
		{GatewayTimeout, 504, TypeBlank, ""},
		{BadRequest, 400, TypeBlank, ""},
		{NotFound, 404, TypeBlank, ""},
		{InternalError, 500, TypeBlank, ""},
		{RequestTimeout, 408, TypeBlank, ""},
		{ContentTooLarge, 413, TypeBlank, ""},
		{URITooLong, 414, TypeBlank, ""},
		{0, 500, TypeBlank, ""},
		{Kind(200), 500, TypeBlank, ""},
	} {
		t.Run(tt.kind.String(), func(t *testing.T) {
			res := do(t, w, http.MethodGet, nil, Answer{Kind: tt.kind})
			if res.status != tt.status {
				t.Errorf("status = %d, want %d", res.status, tt.status)
			}
			if got := res.header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			p := checkJSON(t, res.body)
			want := map[string]any{
				"type":   tt.typ,
				"title":  catalogs[langEN].titles[tt.kind.orInternal()],
				"status": float64(tt.status),
				"detail": p["detail"],
			}
			if tt.retryAfter != "" {
				want["retry_after"] = float64(1)
			}
			if diff := cmp.Diff(p, want); diff != "" {
				t.Errorf("problem (-got +want):\n%s", diff)
			}
			for k, v := range map[string]string{
				"Content-Type":           "application/problem+json; charset=utf-8",
				"Content-Language":       "en",
				"Cache-Control":          "no-store",
				"X-Content-Type-Options": "nosniff",
				"Vary":                   "Accept, Accept-Language",
			} {
				if got := res.header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			for _, k := range []string{"Ratelimit", "Ratelimit-Policy", "Access-Control-Allow-Origin", "Content-Security-Policy"} {
				if v, ok := res.header[k]; ok {
					t.Errorf("%s = %q, want none", k, v)
				}
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	w := mustWriter(t, Options{})
	fixed := mustRule(t, RuleSpec{Name: "ip", RetryAfter: 300 * time.Second, Policies: []Policy{{Name: "ip", Quota: 1500, Window: 5 * time.Minute}}})
	computed := mustRule(t, RuleSpec{Name: "ip", Policies: []Policy{{Name: "ip", Quota: 1500, Window: 5 * time.Minute}}})
	for _, tt := range []struct {
		name      string
		a         Answer
		want      string // Retry-After; "" for none
		rateLimit string
	}{
		{"computed, rounded up", Answer{Kind: RateLimited, Rule: computed, RetryAfter: 2100 * time.Millisecond}, "3", `"ip";r=0;t=3`},
		{"computed zero is 1", Answer{Kind: RateLimited, Rule: computed}, "1", `"ip";r=0;t=1`},
		{"fixed wins", Answer{Kind: RateLimited, Rule: fixed, RetryAfter: 2 * time.Second}, "300", `"ip";r=0;t=300`},
		{"remaining", Answer{Kind: RateLimited, Rule: computed, RetryAfter: time.Second, Remaining: 7}, "1", `"ip";r=7;t=1`},
		{"503 computed", Answer{Kind: Unavailable, Rule: computed, RetryAfter: 10 * time.Second}, "10", `"ip";r=0;t=10`},
		{"403 has none", Answer{Kind: Denied, Rule: computed}, "", ""},
		{"504 given", Answer{Kind: GatewayTimeout, RetryAfter: 30 * time.Second}, "30", ""},
		{"504 not given", Answer{Kind: GatewayTimeout}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, w, http.MethodGet, nil, tt.a)
			if got := res.header.Get("Retry-After"); got != tt.want {
				t.Errorf("Retry-After = %q, want %q", got, tt.want)
			}
			if got := res.header.Get("Ratelimit"); got != tt.rateLimit {
				t.Errorf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
			p := checkJSON(t, res.body)
			if ra, ok := p["retry_after"]; tt.want == "" && ok || tt.want != "" && fmt.Sprint(ra) != tt.want {
				t.Errorf("retry_after member = %v, want %q", ra, tt.want)
			}
		})
	}
}

func TestRetrySentence(t *testing.T) {
	w := mustWriter(t, Options{})
	for _, tt := range []struct {
		name string
		a    Answer
		want int // "Please try again in" sentences
	}{
		{"catalog detail says it once", Answer{Kind: RateLimited, RetryAfter: 300 * time.Second}, 1},
		{"504 with retry", Answer{Kind: GatewayTimeout, RetryAfter: 30 * time.Second}, 1},
		{"504 without retry", Answer{Kind: GatewayTimeout}, 0},
		{"message without retry", Answer{Kind: RateLimited, Rule: csvRule(t)}, 1},
		{"message with retry", Answer{Kind: RateLimited, Rule: mustRule(t, RuleSpec{
			Message: mustMessage(t, map[string]string{"": "Wait {retry_after_human} ({retry_after} s)."}),
		}), RetryAfter: 90 * time.Second}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []format{formatHTML, formatText} {
				res := do(t, w, http.MethodGet, map[string]string{"Accept": formatAccept[f]}, tt.a)
				if got := strings.Count(res.body, "Please try again in "); got != tt.want {
					t.Errorf("%s body has %d retry sentences, want %d\n%s", formatNames[f], got, tt.want, res.body)
				}
			}
		})
	}
	res := do(t, w, http.MethodGet, map[string]string{"Accept": "text/plain"}, Answer{Kind: RateLimited, Rule: mustRule(t, RuleSpec{
		Message: mustMessage(t, map[string]string{"": "Wait {retry_after_human} ({retry_after} s)."}),
	}), RetryAfter: 90 * time.Second})
	if want := "429 Too many requests\n\nWait 90 seconds (90 s).\n"; res.body != want {
		t.Errorf("body = %q, want %q", res.body, want)
	}
}

func TestCORS(t *testing.T) {
	for _, tt := range []struct {
		name      string
		cors      CORS
		origin    string
		allow     string // "" for none
		expose    string
		vary      string
		rateLimit bool
	}{
		{name: "off", vary: "Accept, Accept-Language"},
		{name: "off, with Origin", origin: "https://mavedb.org", vary: "Accept, Accept-Language"},
		{
			name:   "any origin",
			cors:   CORS{AllowOrigins: []string{"*"}},
			origin: "https://mavedb.org", allow: "*",
			expose: "Retry-After, RateLimit, RateLimit-Policy", vary: "Accept, Accept-Language",
		},
		{
			name:  "any origin, no Origin",
			cors:  CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}},
			allow: "*", expose: "Retry-After", vary: "Accept, Accept-Language",
		},
		{
			name:   "listed origin",
			cors:   CORS{AllowOrigins: []string{"https://www.mavedb.org", "https://MaveDB.org/"}},
			origin: "https://mavedb.org", allow: "https://mavedb.org",
			expose: "Retry-After, RateLimit, RateLimit-Policy", vary: "Accept, Accept-Language, Origin",
		},
		{
			name:   "unlisted origin",
			cors:   CORS{AllowOrigins: []string{"https://mavedb.org"}},
			origin: "https://evil.example",
			expose: "Retry-After, RateLimit, RateLimit-Policy", vary: "Accept, Accept-Language, Origin",
		},
		{
			name:   "origin differing in port",
			cors:   CORS{AllowOrigins: []string{"https://mavedb.org"}},
			origin: "https://mavedb.org:8443",
			expose: "Retry-After, RateLimit, RateLimit-Policy", vary: "Accept, Accept-Language, Origin",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, Options{CORS: tt.cors})
			h := map[string]string{}
			if tt.origin != "" {
				h["Origin"] = tt.origin
			}
			res := do(t, w, http.MethodGet, h, Answer{Kind: RateLimited, Rule: csvRule(t)})
			got := [3]string{res.header.Get("Access-Control-Allow-Origin"), res.header.Get("Access-Control-Expose-Headers"), res.header.Get("Vary")}
			if want := [3]string{tt.allow, tt.expose, tt.vary}; got != want {
				t.Errorf("Access-Control-Allow-Origin, -Expose-Headers, Vary = %q, want %q", got, want)
			}
			if n := len(res.header.Values("Access-Control-Allow-Origin")); n > 1 {
				t.Errorf("%d Access-Control-Allow-Origin fields, want at most 1", n)
			}
		})
	}
}

func TestHTMLAccessible(t *testing.T) {
	w := mustWriter(t, Options{})
	for k := Kind(1); int(k) <= numKinds; k++ {
		for l := range lang(numLangs) {
			tag := catalogs[l].tag
			res := do(t, w, http.MethodGet, map[string]string{"Accept": chromeAccept, "Accept-Language": tag}, Answer{Kind: k, Rule: csvRule(t)})
			if got := res.header.Get("Content-Language"); got != tag {
				t.Errorf("%s %s: Content-Language = %q, want %q", k, tag, got, tag)
			}
			if got := res.header.Get("Content-Type"); got != "text/html; charset=utf-8" {
				t.Errorf("%s %s: Content-Type = %q", k, tag, got)
			}
			if csp := res.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") {
				t.Errorf("%s %s: Content-Security-Policy = %q", k, tag, csp)
			}
			for _, want := range []string{
				"<!doctype html>\n", `<html lang="` + tag + `">`, `<meta charset="utf-8">`,
				`<meta name="viewport" content="width=device-width, initial-scale=1">`,
				"<title>" + catalogs[l].titles[k] + " (" + strconv.Itoa(k.Status()) + ")</title>",
				"<main>", "<h1>" + catalogs[l].titles[k] + "</h1>", `<p role="alert">`, "</main>",
				`<a href="https://example.org/mavedb/bulk">`,
			} {
				if !strings.Contains(res.body, want) {
					t.Errorf("%s %s: HTML lacks %q:\n%s", k, tag, want, res.body)
				}
			}
			for _, bad := range []string{"<script", "javascript:", " on", "<img", "<iframe"} {
				if strings.Contains(strings.ToLower(res.body), bad) {
					t.Errorf("%s %s: HTML contains %q:\n%s", k, tag, bad, res.body)
				}
			}
		}
	}
}

func TestEscaping(t *testing.T) {
	w := mustWriter(t, Options{})
	const name = `<script>alert("x")</script>&`
	const limit = `1/1s"</p>`
	rule := mustRule(t, RuleSpec{
		Name:  name,
		Limit: limit,
		Message: mustMessage(t, map[string]string{
			"": `<b>{rule}</b> "{limit}" \ https://e.org/?a=1&b=2 {{braces}} {retry_after}`,
		}),
	})
	wantDetail := `<b>` + name + `</b> "` + limit + `" \ https://e.org/?a=1&b=2 {braces} 5`

	p := checkJSON(t, do(t, w, http.MethodGet, nil, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 5 * time.Second}).body)
	for k, want := range map[string]any{"detail": wantDetail, "rule": name, "limit": limit, "violated-policies": []any{name}} {
		if diff := cmp.Diff(p[k], want); diff != "" {
			t.Errorf("JSON %s (-got +want):\n%s", k, diff)
		}
	}

	text := do(t, w, http.MethodGet, map[string]string{"Accept": "text/plain"}, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 5 * time.Second}).body
	if !strings.Contains(text, "\n"+wantDetail+"\n") {
		t.Errorf("text body lacks the raw detail %q:\n%s", wantDetail, text)
	}

	page := do(t, w, http.MethodGet, map[string]string{"Accept": "text/html"}, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 5 * time.Second}).body
	wantHTML := `<p role="alert">&lt;b&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&lt;/b&gt; &#34;1/1s&#34;&lt;/p&gt;&#34; \ ` +
		`<a href="https://e.org/?a=1&amp;b=2">https://e.org/?a=1&amp;b=2</a> {braces} 5</p>`
	if !strings.Contains(page, wantHTML) {
		t.Errorf("HTML lacks %s:\n%s", wantHTML, page)
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<b>") {
		t.Errorf("HTML lets markup through:\n%s", page)
	}
}

func TestMessageLanguages(t *testing.T) {
	esOnly := mustRule(t, RuleSpec{Message: mustMessage(t, map[string]string{"es": "Solo en español."})})
	untagged := mustRule(t, RuleSpec{Message: mustMessage(t, map[string]string{"": "Texto sin etiqueta."})})
	both := mustRule(t, RuleSpec{Message: mustMessage(t, map[string]string{"": "Default text.", "es": "Texto en español."})})
	for _, tt := range []struct {
		name       string
		defaultTag string
		rule       *Rule
		accept     string
		wantLang   string
		wantDetail string
	}{
		{"message only in es", "", esOnly, "en", "es", "Solo en español."},
		{"untagged is the default language", "es", untagged, "en", "es", "Texto sin etiqueta."},
		{"untagged with default en", "", untagged, "es", "en", "Texto sin etiqueta."},
		{"tagged beats untagged", "", both, "es", "es", "Texto en español."},
		{"untagged fills the default", "", both, "en", "en", "Default text."},
		{"catalog", "", nil, "es-AR", "es", catalogs[langES].details[NotFound]},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := mustWriter(t, Options{DefaultLanguage: tt.defaultTag})
			res := do(t, w, http.MethodGet, map[string]string{"Accept-Language": tt.accept}, Answer{Kind: NotFound, Rule: tt.rule})
			if got := res.header.Get("Content-Language"); got != tt.wantLang {
				t.Errorf("Content-Language = %q, want %q", got, tt.wantLang)
			}
			if got := checkJSON(t, res.body)["detail"]; got != tt.wantDetail {
				t.Errorf("detail = %q, want %q", got, tt.wantDetail)
			}
		})
	}
}

func TestPolicies(t *testing.T) {
	rule := mustRule(t, RuleSpec{Name: "api", Policies: []Policy{
		{Name: "api-burst", Quota: 60, Window: time.Minute},
		{Name: "api-daily", Quota: 5000, Window: 24 * time.Hour},
	}})
	if got, want := rule.PolicyField(), `"api-burst";q=60;w=60, "api-daily";q=5000;w=86400`; got != want {
		t.Errorf("PolicyField() = %s, want %s", got, want)
	}
	if got := rule.PolicyName(1) + "," + rule.PolicyName(2); got != "api-daily," {
		t.Errorf("PolicyName(1), PolicyName(2) = %s, want api-daily,", got)
	}
	for _, tt := range []struct {
		limit     int
		violated  string
		rateLimit string
	}{
		{0, "api-burst", `"api-burst";r=0;t=5`},
		{1, "api-daily", `"api-daily";r=0;t=5`},
		{7, "api-burst", `"api-burst";r=0;t=5`},
		{-1, "api-burst", `"api-burst";r=0;t=5`},
	} {
		res := do(t, mustWriter(t, Options{}), http.MethodGet, nil, Answer{Kind: RateLimited, Rule: rule, RetryAfter: 5 * time.Second, Limit: tt.limit})
		if got := checkJSON(t, res.body)["violated-policies"]; !cmp.Equal(got, []any{tt.violated}) {
			t.Errorf("Limit %d: violated-policies = %v, want [%s]", tt.limit, got, tt.violated)
		}
		if got := res.header.Get("Ratelimit"); got != tt.rateLimit {
			t.Errorf("Limit %d: RateLimit = %s, want %s", tt.limit, got, tt.rateLimit)
		}
		if got := res.header.Get("Ratelimit-Policy"); got != rule.PolicyField() {
			t.Errorf("Limit %d: RateLimit-Policy = %s, want %s", tt.limit, got, rule.PolicyField())
		}
		// Both fields are valid RFC 9651 Lists.
		parseSFList(t, res.header.Get("Ratelimit"))
		parseSFList(t, res.header.Get("Ratelimit-Policy"))
	}

	res := do(t, mustWriter(t, Options{OmitRateLimitFields: true}), http.MethodGet, nil, Answer{Kind: RateLimited, Rule: rule})
	for _, k := range []string{"Ratelimit", "Ratelimit-Policy"} {
		if v, ok := res.header[k]; ok {
			t.Errorf("OmitRateLimitFields: %s = %q, want none", k, v)
		}
	}
}

func TestHead(t *testing.T) {
	w := mustWriter(t, Options{})
	get := do(t, w, http.MethodGet, nil, Answer{Kind: RateLimited})
	head := do(t, w, http.MethodHead, nil, Answer{Kind: RateLimited})
	if head.body != "" {
		t.Errorf("HEAD body = %q, want none", head.body)
	}
	if got, want := head.header.Get("Content-Length"), strconv.Itoa(len(get.body)); got != want {
		t.Errorf("HEAD Content-Length = %s, want %s (the GET body's)", got, want)
	}
}

func TestNilRequestAndZeroWriter(t *testing.T) {
	var w Writer
	rec := httptest.NewRecorder()
	w.Write(rec, nil, Answer{Kind: Unavailable, RetryAfter: time.Minute})
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "60" || rec.Header().Get("Content-Language") != "en" {
		t.Errorf("zero Writer, nil request: %d %v", rec.Code, rec.Header())
	}
	checkJSON(t, rec.Body.String())
}

func TestNewWriterErrors(t *testing.T) {
	_, err := NewWriter(Options{
		DefaultLanguage: "fr",
		CORS: CORS{
			AllowOrigins:  []string{"*", "mavedb.org", "https://mavedb.org/api", "ftp://x.org", "https://u@x.org"},
			ExposeHeaders: []string{"Retry-After", "bad header"},
		},
	})
	if err == nil {
		t.Fatal("NewWriter with bad options: no error")
	}
	for _, want := range []string{`default language "fr"`, `"mavedb.org"`, `"https://mavedb.org/api"`, `"ftp://x.org"`, `"https://u@x.org"`, `"*" cannot be listed`, `"bad header"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewWriter error %q does not mention %q", err, want)
		}
	}
	if _, err := NewWriter(Options{CORS: CORS{ExposeHeaders: []string{"Retry-After"}}}); err == nil {
		t.Error("expose_headers without allow_origins: no error")
	}
	if _, err := NewWriter(Options{DefaultLanguage: "ES"}); err != nil {
		t.Errorf("DefaultLanguage ES: %v", err)
	}
}

func TestNewRuleErrors(t *testing.T) {
	msg := mustMessage(t, map[string]string{"en": "{rule}: {limit}"})
	_, err := NewRule(RuleSpec{
		RetryAfter: -time.Second,
		Message:    msg,
		Policies:   []Policy{{Name: "é"}},
	})
	if err == nil {
		t.Fatal("NewRule with bad spec: no error")
	}
	for _, want := range []string{"retry_after -1s is negative", "uses {rule}", "uses {limit}", "not printable ASCII"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NewRule error %q does not mention %q", err, want)
		}
	}
	// Each problem of one field names it.
	var fields []string
	for _, e := range leaves(err) {
		if se, ok := e.(*SpecError); ok {
			fields = append(fields, se.Field)
		}
	}
	if diff := cmp.Diff(fields, []string{"RetryAfter", "Name", "Message"}); diff != "" {
		t.Errorf("NewRule's SpecError fields (-got +want):\n%s", diff)
	}
}

func TestWriteConcurrent(t *testing.T) {
	w := mustWriter(t, mavedbCORS)
	rule := csvRule(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				res := do(t, w, http.MethodGet, map[string]string{
					"Accept":          formatAccept[format((i+j)%int(numFormats))],
					"Accept-Language": catalogs[(i+j)%int(numLangs)].tag,
				}, Answer{Kind: Kind(1 + j%numKinds), Rule: rule})
				if res.status == 0 || res.body == "" {
					t.Errorf("empty answer")
				}
			}
		})
	}
	wg.Wait()
}

// TestImports keeps the package on the standard library: it is on every
// refusal's path and must not pull in the gateway's other dependencies.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		switch imp {
		case "github.com/floodgate/floodgate/internal/httpsyntax", "github.com/floodgate/floodgate/ratelimit":
			continue // stdlib-only themselves (their own tests and httplimit's deps test check)
		}
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("package respond imports %s; it may import the standard library only", imp)
		}
	}
}

// TestLimitNamesTheRefusingOne: a rule of several limits names the one
// that refused (Answer.Limit) in "limit" and {limit}, as its
// "violated-policies" does (before, always the first).
func TestLimitNamesTheRefusingOne(t *testing.T) {
	w := mustWriter(t, Options{})
	r := mustRule(t, RuleSpec{
		Name:    "api",
		Limits:  []string{"5/1m", "2/1h"},
		Message: mustMessage(t, map[string]string{"en": "At most {limit}."}),
		Policies: []Policy{
			{Name: "api-1m", Quota: 5, Window: time.Minute},
			{Name: "api-1h", Quota: 2, Window: time.Hour},
		},
	})
	for _, tt := range []struct {
		limit          int
		want, violated string
	}{{0, "5/1m", "api-1m"}, {1, "2/1h", "api-1h"}, {7, "5/1m", "api-1m"}} {
		for range 2 { // the second answer from the bodies built by the first
			res := do(t, w, http.MethodGet, map[string]string{"Accept": "application/json"},
				Answer{Kind: RateLimited, Rule: r, RetryAfter: time.Minute, Limit: tt.limit})
			m := checkJSON(t, res.body)
			if m["limit"] != tt.want || m["detail"] != "At most "+tt.want+"." {
				t.Errorf("Limit %d: limit %v, detail %v; want %s", tt.limit, m["limit"], m["detail"], tt.want)
			}
			if v, _ := m["violated-policies"].([]any); len(v) != 1 || v[0] != tt.violated {
				t.Errorf("Limit %d: violated-policies %v, want [%s]", tt.limit, m["violated-policies"], tt.violated)
			}
			text := do(t, w, http.MethodGet, map[string]string{"Accept": "text/plain"},
				Answer{Kind: RateLimited, Rule: r, RetryAfter: time.Minute, Limit: tt.limit})
			if !strings.Contains(text.body, "At most "+tt.want+".") {
				t.Errorf("Limit %d: text body %q lacks %s", tt.limit, text.body, tt.want)
			}
		}
	}
}
