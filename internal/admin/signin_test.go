package admin

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// signInEnv is an admin handler with a token and a clock the test moves.
type signInEnv struct {
	h   http.Handler
	srv *gateway.Server
	now time.Time
}

func newSignInEnv(t *testing.T, tok string) *signInEnv {
	t.Helper()
	yaml := "admin: {token: \"${TOKEN}\"}\nstore: {url: memory}\nupstreams: {api: {url: \"http://127.0.0.1:9\"}}\n" +
		"rules:\n  - {name: per-ip, limits: [3/1m]}\n"
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(k string) (string, bool) { return tok, k == "TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
		Store: gateway.NewMemoryStore(0, nil, m), Metrics: m, Logger: slog.New(slog.DiscardHandler),
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	e := &signInEnv{srv: srv, now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
	e.h = Handler(Options{Gatherer: m.Registry, Server: srv, Now: func() time.Time { return e.now }})
	return e
}

// req sends method path with body (a form when it has "="), the cookie c
// (if any) and headers h ("Name: value").
func (e *signInEnv) req(method, target, body string, c *http.Cookie, h ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.RemoteAddr = "203.0.113.7:5000" // not loopback: only the token opens
	if strings.Contains(body, "=") {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c != nil {
		r.AddCookie(c)
	}
	for _, kv := range h {
		k, v, _ := strings.Cut(kv, ": ")
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

func cookieOf(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == signInCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", signInCookie, w.Header()["Set-Cookie"])
	return nil
}

var csrfRE = `<meta name="floodgate-csrf" content="`

func csrfOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, csrfRE)
	if !ok {
		t.Fatalf("page has no CSRF token:\n%.2000s", page)
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestSignIn: the dashboard's sign-in form, the cookie it sets, what the
// cookie opens and what it does not.
func TestSignIn(t *testing.T) {
	const tok = "s3cret-admin-token-0123456789"
	e := newSignInEnv(t, tok)

	// No credentials: the sign-in page, not a bare 401.
	w := e.req("GET", "/admin/", "", nil)
	if w.Code != 401 || !strings.Contains(w.Body.String(), `<form method="post" action="/admin/signin">`) ||
		!strings.Contains(w.Body.String(), `name="token" type="password"`) {
		t.Fatalf("GET /admin/ without credentials = %d:\n%s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("sign-in page Content-Type = %q", ct)
	}
	// Other endpoints stay problem+json for scripts.
	if w := e.req("GET", "/admin/config", "", nil); w.Code != 401 || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Errorf("GET /admin/config without credentials = %d %s", w.Code, w.Header().Get("Content-Type"))
	}

	// A wrong token: the form again, saying so; no cookie.
	w = e.req("POST", "/admin/signin", "token=nope", nil)
	if w.Code != 401 || !strings.Contains(w.Body.String(), "not the admin token") || len(w.Result().Cookies()) != 0 {
		t.Fatalf("wrong token = %d %v:\n%s", w.Code, w.Result().Cookies(), w.Body)
	}

	// The right token: a cookie, and back to the dashboard.
	w = e.req("POST", "/admin/signin", "token="+url.QueryEscape(tok), nil, "Origin: http://example.com", "Sec-Fetch-Site: same-origin")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/admin/" {
		t.Fatalf("right token = %d Location %q:\n%s", w.Code, w.Header().Get("Location"), w.Body)
	}
	c := cookieOf(t, w)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/admin/" || c.Secure || c.MaxAge != 12*3600 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/admin/, not Secure without TLS, 12 h", c)
	}
	if strings.Contains(c.Value, tok) {
		t.Error("the cookie holds the token")
	}
	// Over TLS the cookie is Secure.
	if tc := cookieOf(t, e.req("POST", "https://example.com/admin/signin", "token="+url.QueryEscape(tok), nil)); !tc.Secure {
		t.Errorf("cookie over TLS %+v: want Secure", tc)
	}

	// The cookie opens the dashboard, which holds the CSRF token and a
	// sign-out button, and the read-only endpoints.
	w = e.req("GET", "/admin/", "", c)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `id="rules-table"`) || !strings.Contains(w.Body.String(), `action="/admin/signout"`) {
		t.Fatalf("dashboard with the cookie = %d:\n%.2000s", w.Code, w.Body)
	}
	csrf := csrfOf(t, w.Body.String())
	if strings.Contains(w.Body.String(), tok) {
		t.Error("the dashboard shows the token")
	}
	if w := e.req("GET", "/admin/mode", "", c); w.Code != 200 {
		t.Errorf("GET /admin/mode with the cookie = %d", w.Code)
	}

	// Changing the mode with the cookie needs the CSRF token, from this
	// origin.
	for _, tc := range []struct {
		name string
		h    []string
		want int
	}{
		{"no CSRF token", nil, 403},
		{"wrong CSRF token", []string{csrfHeader + ": " + csrf + "x"}, 403},
		{"another site", []string{csrfHeader + ": " + csrf, "Sec-Fetch-Site: cross-site"}, 403},
		{"a sibling subdomain", []string{csrfHeader + ": " + csrf, "Sec-Fetch-Site: same-site"}, 403},
		{"another origin", []string{csrfHeader + ": " + csrf, "Origin: http://evil.example"}, 403},
		{"the page", []string{csrfHeader + ": " + csrf, "Sec-Fetch-Site: same-origin", "Origin: http://example.com"}, 200},
	} {
		w := e.req("PUT", "/admin/mode", `{"mode":"log-only"}`, c, tc.h...)
		if w.Code != tc.want {
			t.Errorf("PUT /admin/mode with the cookie, %s = %d, want %d: %s", tc.name, w.Code, tc.want, w.Body)
		}
		if tc.want == 403 && e.srv.LogOnly() {
			t.Fatalf("PUT /admin/mode with the cookie, %s: refused but switched", tc.name)
		}
	}
	if !e.srv.LogOnly() {
		t.Error("the page's switch did not switch")
	}
	// Scripts: the Bearer header, no CSRF token.
	if w := e.req("PUT", "/admin/mode", "enforce", nil, "Authorization: Bearer "+tok); w.Code != 200 || e.srv.LogOnly() {
		t.Errorf("PUT /admin/mode with the Bearer header = %d", w.Code)
	}
	// A tampered cookie opens nothing.
	bad := *c
	bad.Value = c.Value[:len(c.Value)-2] + "AA"
	if w := e.req("GET", "/admin/config", "", &bad); w.Code != 401 {
		t.Errorf("tampered cookie = %d, want 401", w.Code)
	}

	// Sign-out needs the CSRF token too, then ends the sign-in: the same
	// cookie, sent again, opens nothing.
	if w := e.req("POST", "/admin/signout", "csrf=wrong", c); w.Code != 403 {
		t.Errorf("sign-out without the CSRF token = %d, want 403", w.Code)
	}
	w = e.req("POST", "/admin/signout", "csrf="+url.QueryEscape(csrf), c, "Sec-Fetch-Site: same-origin")
	if w.Code != http.StatusSeeOther || cookieOf(t, w).MaxAge >= 0 {
		t.Fatalf("sign-out = %d, cookie %v", w.Code, w.Header()["Set-Cookie"])
	}
	if w := e.req("GET", "/admin/", "", c); w.Code != 401 || !strings.Contains(w.Body.String(), "/admin/signin") {
		t.Errorf("the signed-out cookie = %d, want 401 and the sign-in page", w.Code)
	}

	// A sign-in lasts 12 hours.
	c = cookieOf(t, e.req("POST", "/admin/signin", "token="+url.QueryEscape(tok), nil))
	e.now = e.now.Add(12*time.Hour - time.Second)
	if w := e.req("GET", "/admin/config", "", c); w.Code != 200 {
		t.Errorf("cookie after 12 h less a second = %d, want 200", w.Code)
	}
	e.now = e.now.Add(time.Second)
	if w := e.req("GET", "/admin/config", "", c); w.Code != 401 {
		t.Errorf("cookie after 12 h = %d, want 401", w.Code)
	}
}

// TestSignInTokenChange: changing admin.token (a reload) ends every
// sign-in made with the old one.
func TestSignInTokenChange(t *testing.T) {
	e := newSignInEnv(t, "first-token-0123456789")
	c := cookieOf(t, e.req("POST", "/admin/signin", "token=first-token-0123456789", nil))
	if w := e.req("GET", "/admin/config", "", c); w.Code != 200 {
		t.Fatalf("cookie = %d", w.Code)
	}
	yaml := "admin: {token: second-token-0123456789}\nstore: {url: memory}\nupstreams: {api: {url: \"http://127.0.0.1:9\"}}\n"
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	if _, problems := e.srv.Reload(f, []byte(yaml)); len(problems) > 0 {
		t.Fatal(problems)
	}
	if w := e.req("GET", "/admin/config", "", c); w.Code != 401 {
		t.Errorf("cookie of the old token after a reload = %d, want 401", w.Code)
	}
}

// TestSignInAttemptsLimited: past a few wrong tokens the form answers 429
// with Retry-After without comparing (even the right token), until time
// has passed.
func TestSignInAttemptsLimited(t *testing.T) {
	const tok = "right-token-0123456789"
	e := newSignInEnv(t, tok)
	for i := range failedBurst {
		if w := e.req("POST", "/admin/signin", "token=wrong", nil); w.Code != 401 {
			t.Fatalf("wrong token %d = %d, want 401", i+1, w.Code)
		}
	}
	w := e.req("POST", "/admin/signin", "token="+tok, nil)
	if w.Code != 429 || w.Header().Get("Retry-After") != "2" || len(w.Result().Cookies()) != 0 {
		t.Fatalf("after %d wrong tokens = %d Retry-After %q, want 429, 2 and no cookie", failedBurst, w.Code, w.Header().Get("Retry-After"))
	}
	e.now = e.now.Add(failedEvery)
	if w := e.req("POST", "/admin/signin", "token="+tok, nil); w.Code != http.StatusSeeOther {
		t.Errorf("right token %s later = %d, want 303", failedEvery, w.Code)
	}
}

// TestSignInPageNoTokenConfigured: without admin.token there is nothing
// to sign in with; loopback peers get the dashboard as before, with the
// mode switch, and no sign-out.
func TestSignInPageNoTokenConfigured(t *testing.T) {
	e := newDashEnv(t, "", nil)
	w := get(e.h, "/admin/", "", "127.0.0.1:5000")
	if w.Code != 200 || !strings.Contains(w.Body.String(), `id="mode-switch"`) || strings.Contains(w.Body.String(), "/admin/signout") {
		t.Errorf("GET /admin/ from loopback without a token = %d", w.Code)
	}
	r := httptest.NewRequest("POST", "/admin/signin", strings.NewReader("token=x"))
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rw := httptest.NewRecorder()
	e.h.ServeHTTP(rw, r)
	if rw.Code != http.StatusSeeOther || len(rw.Result().Cookies()) != 0 {
		t.Errorf("sign-in without a configured token = %d %v, want 303 to the dashboard, no cookie", rw.Code, rw.Result().Cookies())
	}
}
