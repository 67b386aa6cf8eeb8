package gateway_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

const openverse = "../../examples/openverse.yaml"

// The credentials and secrets of the Openverse tests; none may appear in
// a log or reach the browser.
const (
	ovClientID     = "frontend-app-id"
	ovClientSecret = "frontend-app-secret-0123456789"
	ovSigning      = "test-signing-secret-0123456789-0123456789"
	ovAdminToken   = "admin-token-0123456789abcdef"
)

// apiRecorder is the media API upstream: a token endpoint and media
// routes, recording what reached it.
type apiRecorder struct {
	*httptest.Server
	mu        sync.Mutex
	requests  []apiRequest // media requests, in order
	fetches   atomic.Int64 // token fetches answered
	tokenDown atomic.Bool  // token endpoint answers 500
	// The API answers 401 to media requests with gw-token-N for N up to
	// revoked, and to every one while deny is set.
	revoked atomic.Int64
	deny    atomic.Bool
	// tokenHold, when set, holds each token fetch until it is closed,
	// after closing tokenHeld (once).
	tokenHold, tokenHeld chan struct{}
	heldOnce             sync.Once
}

// holdTokens makes the token endpoint hold every fetch from now until
// the returned func (safe to call more than once, and called at the
// test's end) releases them, and returns a channel closed once a fetch is
// held.
func (a *apiRecorder) holdTokens(t *testing.T) (held <-chan struct{}, release func()) {
	hold, heldCh := make(chan struct{}), make(chan struct{})
	a.mu.Lock()
	a.tokenHold, a.tokenHeld = hold, heldCh
	a.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return heldCh, release
}

type apiRequest struct {
	path, rawPath, requestURI, query, authorization, cookie string
}

func newAPIRecorder(t *testing.T) *apiRecorder {
	a := &apiRecorder{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/auth_tokens/token/" {
			a.mu.Lock()
			hold, held := a.tokenHold, a.tokenHeld
			a.mu.Unlock()
			if hold != nil {
				a.heldOnce.Do(func() { close(held) })
				<-hold
			}
			if a.tokenDown.Load() {
				http.Error(w, `{"error":"server_error"}`, http.StatusInternalServerError)
				return
			}
			if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "client_credentials" ||
				r.PostForm.Get("client_id") != ovClientID || r.PostForm.Get("client_secret") != ovClientSecret {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			n := a.fetches.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"access_token":"gw-token-%d","token_type":"Bearer","expires_in":36000,"scope":"read"}`, n)
			return
		}
		a.mu.Lock()
		a.requests = append(a.requests, apiRequest{
			path: r.URL.Path, rawPath: r.URL.RawPath, requestURI: r.RequestURI, query: r.URL.RawQuery,
			authorization: r.Header.Get("Authorization"), cookie: r.Header.Get("Cookie"),
		})
		a.mu.Unlock()
		n, _ := strconv.ParseInt(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer gw-token-"), 10, 64)
		if a.deny.Load() || n > 0 && n <= a.revoked.Load() {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"detail":"Invalid token."}`)
			return
		}
		// An API that sets a cookie: it must never reach the browser.
		http.SetCookie(w, &http.Cookie{Name: "api_session", Value: "from-the-api"})
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"result_count":0,"results":[]}`)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *apiRecorder) all() []apiRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]apiRequest(nil), a.requests...)
}

// frontendRecorder is the web frontend upstream.
type frontendRecorder struct {
	*httptest.Server
	mu      sync.Mutex
	cookies []string // the Cookie header of each request
	paths   []string
}

func newFrontendRecorder(t *testing.T) *frontendRecorder {
	f := &frontendRecorder{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.cookies = append(f.cookies, r.Header.Get("Cookie"))
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		if r.Header.Get("X-Test-Early-Hints") != "" {
			// A 103 before the answer, with a cookie posing as floodgate's.
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.Header().Add("Set-Cookie", "ovSession=fixated-by-the-frontend; Path=/")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			w.Header().Del("Set-Cookie")
		}
		if r.Header.Get("X-Test-Trailers") != "" {
			// Cookies in the trailer section, declared and not.
			w.Header().Set("Trailer", "Set-Cookie")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(200)
			io.WriteString(w, "<!doctype html><title>Openverse</title>")
			w.(http.Flusher).Flush()
			w.Header().Add("Set-Cookie", "ovSession=fixated-in-a-trailer; Path=/")
			w.Header().Add("Set-Cookie", "ov_theme=dark; Path=/")
			w.Header().Set(http.TrailerPrefix+"X-Extra", "1")
			return
		}
		// The site's own cookie passes; one posing as floodgate's does not.
		w.Header().Add("Set-Cookie", "ov_theme=light; Path=/; SameSite=Lax")
		w.Header().Add("Set-Cookie", "ovSession=set-by-the-frontend; Path=/")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<!doctype html><title>Openverse</title>")
	}))
	t.Cleanup(f.Close)
	return f
}

// ovHarness runs examples/openverse.yaml with real upstreams on loopback,
// a public and an internal listener, the admin API and a captured log.
type ovHarness struct {
	t        *testing.T
	api      *apiRecorder
	front    *frontendRecorder
	srv      *gateway.Server
	public   *httptest.Server
	internal *httptest.Server
	admin    http.Handler
	clock    *clock
	logs     *testnet.Buffer
}

func newOpenverse(t *testing.T, env string, extra map[string]string) *ovHarness {
	t.Helper()
	h := &ovHarness{t: t, api: newAPIRecorder(t), front: newFrontendRecorder(t), clock: newClock(), logs: &testnet.Buffer{}}
	vars := map[string]string{
		"FLOODGATE_API_UPSTREAM":      h.api.URL,
		"FLOODGATE_FRONTEND_UPSTREAM": h.front.URL,
		"FLOODGATE_TRUSTED_PROXIES":   "127.0.0.0/8, ::1/128",
		"FLOODGATE_ADMIN_TOKEN":       ovAdminToken,
		"HMAC_SIGNING_SECRET":         ovSigning,
		"API_CLIENT_ID":               ovClientID,
		"API_CLIENT_SECRET":           ovClientSecret,
	}
	for k, v := range extra {
		if v == "" {
			delete(vars, k)
		} else {
			vars[k] = v
		}
	}
	f, err := config.Load(openverse, env, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	f.Config.ApplyDefaults()
	f.Config.Log.Decisions = "all" // the most the log can say, for the no-leak check
	f.Config.Log.Level = "debug"
	metrics := telemetry.NewMetrics("test")
	store := gateway.NewMemoryStore(f.Config.Store.MaxKeys, h.clock.Now, metrics)
	srv, problems := gateway.NewServer(f, nil, gateway.Options{
		Store: store, Metrics: metrics, Logger: telemetry.NewLogger(h.logs, "debug"), Now: h.clock.Now,
	})
	if len(problems) > 0 {
		t.Fatalf("gateway.NewServer: %v", problems)
	}
	h.srv = srv
	h.public = newFront(t, srv)
	t.Cleanup(h.public.Close)
	h.internal = newFront(t, srv.Internal())
	t.Cleanup(h.internal.Close)
	h.admin = admin.Handler(admin.Options{Gatherer: metrics.Registry, Server: srv})
	return h
}

// get sends a GET as client ip (behind the trusted load balancer) to base.
func (h *ovHarness) get(base, path, ip string, hdr ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", ip)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		h.t.Fatalf("GET %s: %v", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// pageLoad loads the home page as a browser would and returns the session
// cookie floodgate issued ("name=value").
func (h *ovHarness) pageLoad(ip string) string {
	h.t.Helper()
	resp, _ := h.get(h.public.URL, "/", ip, "Accept", "text/html")
	for _, c := range resp.Cookies() {
		if c.Name == "ovSession" {
			return "ovSession=" + c.Value
		}
	}
	h.t.Fatalf("page load from %s: no ovSession cookie (status %d, Set-Cookie %q)", ip, resp.StatusCode, resp.Header.Values("Set-Cookie"))
	return ""
}

// setMode switches the mode through the admin API with the token.
func (h *ovHarness) setMode(mode string) {
	h.t.Helper()
	req := httptest.NewRequest("PUT", "/admin/mode", strings.NewReader(`{"mode":"`+mode+`"}`))
	req.Header.Set("Authorization", "Bearer "+ovAdminToken)
	rec := httptest.NewRecorder()
	h.admin.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		h.t.Fatalf("PUT /admin/mode %s: %d %s", mode, rec.Code, rec.Body)
	}
}

func (h *ovHarness) metric(series string) float64 { return scrape(h.admin, series) }

// TestOpenverseFirstPageLoad: the first page load gets ovSession with
// HttpOnly, Secure, SameSite=Lax and a max age; the frontend's own cookie
// passes both ways, its attempt at ovSession does not, and ovSession
// never reaches the frontend.
// TestOpenverseEarlyHintsCannotSetSession: floodgate owns the session
// cookie, so an upstream's Set-Cookie for it is stripped from an
// informational (103) answer too, not only from the final one (a 103's
// fields would otherwise reach the client before the strip).
func TestOpenverseEarlyHintsCannotSetSession(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	var early []http.Header
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
		early = append(early, http.Header(hdr).Clone())
		return nil
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", h.public.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", "203.0.113.11")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("X-Test-Early-Hints", "1")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if len(early) != 1 || early[0].Get("Link") == "" {
		t.Fatalf("informational answers %v, want the frontend's 103", early)
	}
	if sc := early[0].Values("Set-Cookie"); len(sc) > 0 {
		t.Errorf("the 103 carries Set-Cookie %q", sc)
	}
	for _, c := range resp.Cookies() {
		if c.Name == "ovSession" && c.Value == "fixated-by-the-frontend" {
			t.Errorf("the frontend's ovSession reached the browser: %q", resp.Header.Values("Set-Cookie"))
		}
	}
}

// TestOpenverseTrailersCannotSetSession: nor can a Set-Cookie in the
// frontend's trailer section (browsers take no cookies from trailers,
// other clients might).
func TestOpenverseTrailersCannotSetSession(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	resp, body := h.get(h.public.URL, "/", "203.0.113.12", "Accept", "text/html", "X-Test-Trailers", "1")
	if resp.StatusCode != 200 || !strings.Contains(body, "Openverse") {
		t.Fatalf("page load: %d %q", resp.StatusCode, body)
	}
	if got := resp.Trailer.Get("X-Extra"); got != "1" {
		t.Fatalf("trailers %v: the frontend's did not come through", resp.Trailer)
	}
	got := resp.Trailer.Values("Set-Cookie")
	if len(got) != 1 || got[0] != "ov_theme=dark; Path=/" {
		t.Errorf("trailer Set-Cookie %q, want only the site's own", got)
	}
}

func TestOpenverseFirstPageLoad(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	resp, _ := h.get(h.public.URL, "/", "203.0.113.10", "Accept", "text/html")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("page load: %d", resp.StatusCode)
	}
	var session *http.Cookie
	var names []string
	for _, c := range resp.Cookies() {
		names = append(names, c.Name)
		if c.Name == "ovSession" {
			if session != nil {
				t.Fatalf("two ovSession cookies: %q", resp.Header.Values("Set-Cookie"))
			}
			session = c
		}
	}
	if session == nil {
		t.Fatalf("no ovSession in %q", resp.Header.Values("Set-Cookie"))
	}
	if !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteLaxMode || session.MaxAge != 3600 {
		t.Errorf("ovSession attributes: HttpOnly %v Secure %v SameSite %v MaxAge %d; want true true Lax 3600",
			session.HttpOnly, session.Secure, session.SameSite, session.MaxAge)
	}
	if session.Value == "set-by-the-frontend" || !strings.Contains(strings.Join(names, " "), "ov_theme") {
		t.Errorf("cookies to the browser %v (ovSession %q): want floodgate's ovSession and the frontend's ov_theme", names, session.Value)
	}
	// The next page load sends both cookies: the frontend gets its own
	// only, and no new session is issued.
	resp, _ = h.get(h.public.URL, "/search?q=cat", "203.0.113.10",
		"Accept", "text/html", "Cookie", "ov_theme=light; ovSession="+session.Value+"; other=1")
	for _, c := range resp.Cookies() {
		if c.Name == "ovSession" {
			t.Errorf("a valid session was replaced on the second page load")
		}
	}
	h.front.mu.Lock()
	got := h.front.cookies[len(h.front.cookies)-1]
	h.front.mu.Unlock()
	if got != "ov_theme=light; other=1" {
		t.Errorf("frontend received Cookie %q, want %q", got, "ov_theme=light; other=1")
	}
	if v := h.metric("floodgate_sessions_issued_total"); v != 1 {
		t.Errorf("floodgate_sessions_issued_total = %v, want 1", v)
	}
	// Assets are not page loads: no session for them.
	resp, _ = h.get(h.public.URL, "/_nuxt/app.js", "203.0.113.11")
	for _, c := range resp.Cookies() {
		if c.Name == "ovSession" {
			t.Errorf("an asset request got a session")
		}
	}
}

// TestOpenverseSearchIsRewrittenAndAuthenticated: a search reaches
// /v1/images/ with the allowed parameters only, the gateway's bearer
// token and no browser cookie or credentials; the API's Set-Cookie and
// the token never reach the browser.
func TestOpenverseSearchIsRewrittenAndAuthenticated(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	cookie := h.pageLoad("203.0.113.20")
	resp, body := h.get(h.public.URL,
		"/api/search/image/?q=cat&page=2&page_size=20&license=by&mature=true&format=json&unstable__include_sensitive_results=true&peaks=true",
		"203.0.113.20", "Cookie", cookie+"; ov_theme=light", "Authorization", "Bearer browser-token", "Accept", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("search: %d %s", resp.StatusCode, body)
	}
	reqs := h.api.all()
	if len(reqs) != 1 {
		t.Fatalf("API received %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != "/v1/images/" {
		t.Errorf("API path %q, want /v1/images/", r.path)
	}
	q, _ := url.ParseQuery(r.query)
	for _, k := range []string{"mature", "format"} {
		if q.Has(k) {
			t.Errorf("parameter %s was forwarded: %q", k, r.query)
		}
	}
	for k, v := range map[string]string{"q": "cat", "page": "2", "page_size": "20", "license": "by", "unstable__include_sensitive_results": "true", "peaks": "true"} {
		if q.Get(k) != v {
			t.Errorf("parameter %s = %q, want %q (query %q)", k, q.Get(k), v, r.query)
		}
	}
	if r.authorization != "Bearer gw-token-1" {
		t.Errorf("API Authorization %q, want the gateway's token", r.authorization)
	}
	if r.cookie != "" {
		t.Errorf("API received Cookie %q", r.cookie)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) > 0 {
		t.Errorf("the API's Set-Cookie reached the browser: %q", sc)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			if strings.Contains(v, "gw-token") {
				t.Errorf("the gateway's token reached the browser in %s", k)
			}
		}
	}
	// Audio, single and related results map the same way; the token is
	// fetched once and reused.
	id := "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	for path, want := range map[string]string{
		"/api/search/audio/?q=rain":   "/v1/audio/",
		"/api/image/" + id:            "/v1/images/" + id + "/",
		"/api/audio/related/" + id:    "/v1/audio/" + id + "/related/",
		"/api/image/related/" + id:    "/v1/images/" + id + "/related/",
		"/api/audio/" + id + "?q=dog": "/v1/audio/" + id + "/",
	} {
		before := len(h.api.all())
		if resp, _ := h.get(h.public.URL, path, "203.0.113.20", "Cookie", cookie); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
			continue
		}
		if reqs := h.api.all(); len(reqs) != before+1 || reqs[before].path != want {
			t.Errorf("%s reached the API as %v, want %s", path, reqs[before:], want)
		}
	}
	if n := h.api.fetches.Load(); n != 1 {
		t.Errorf("%d token fetches, want 1", n)
	}
	if v := h.metric(`floodgate_plan_usage_ratio{client="openverse.org",plan="frontend"}`); v <= 0 || v > 0.01 {
		t.Errorf("frontend plan usage = %v, want a small positive fraction (6 of 3000/1m)", v)
	}
}

// TestOpenverseInvalidRequestsNeverReachTheAPI: page_size above 20, an
// unknown media type and a non-UUID id never reach the API upstream.
func TestOpenverseInvalidRequestsNeverReachTheAPI(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	resp, body := h.get(h.public.URL, "/api/search/image/?q=cat&page_size=50", "203.0.113.30", "Accept", "application/json")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("page_size=50: %d %s %s, want 400 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// The answer says which parameter, and what it takes, in the
	// client's language.
	if want := `"detail":"The query parameter page_size takes a whole number from 0 to 20."`; !strings.Contains(body, want) {
		t.Errorf("page_size=50: %s, want %s", body, want)
	}
	_, body = h.get(h.public.URL, "/api/search/image/?q=cat&page_size=x", "203.0.113.30", "Accept-Language", "es")
	if want := "El parámetro de consulta page_size admite un número entero de 0 a 20."; !strings.Contains(body, want) {
		t.Errorf("page_size=x in Spanish: %s, want %s", body, want)
	}
	for _, path := range []string{
		"/api/search/video/?q=cat",
		"/api/search/images/?q=cat",
		"/api/image/not-a-uuid",
		"/api/audio/related/1234",
		"/api/image/0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a/extra",
		"/api/search/image/?page_size=abc",
	} {
		h.get(h.public.URL, path, "203.0.113.30")
	}
	if reqs := h.api.all(); len(reqs) != 0 {
		t.Errorf("invalid requests reached the API: %v", reqs)
	}
}

// TestOpenverseEncodedTraversal: a corpus of encoded-traversal paths,
// sent raw, never reaches any API path but /v1/{images|audio}/….
func TestOpenverseEncodedTraversal(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	id := "0d9d8b5c-7e5e-4c16-9d27-2a4f5b8e1c3a"
	corpus := []string{
		"/api/search/image/..%2F..%2Fv1%2Fauth_tokens%2Ftoken%2F",
		"/api/search/%2e%2e/%2e%2e/v1/rate_limit/",
		"/api/search/image%2F..%2F..%2Fadmin/",
		"/api/search/image%2f/",
		"/api/image/%2e%2e%2f%2e%2e%2fv1%2fauth_tokens",
		"/api/image/" + id + "%2F..%2F..%2F..%2Fadmin",
		"/api/image/" + id + "%252F..%252F..%252Fadmin",
		"/api/image/related/..%252F..%252Fv1%252Frate_limit",
		"/api/image/%252e%252e",
		"/api/search/../../v1/auth_tokens/token/",
		"/api/search/image/../../../v1/auth_tokens/token/",
		"/api/image/./../../v1/rate_limit",
		"/api/%2e%2e/v1/images/",
		"/api//search/image/",
		"/api/search//image/",
		"/api/search/image/%00",
		"/api/search/image%00/",
		"/api/search/IMAGE/",
		"/api/search/image%20/",
		"/api/image/" + strings.ToUpper(id),
		"/api/image/" + id + "%3Fq=x",
		"/api/image/" + id + "%23frag",
		"/api/image/" + id + ";jsessionid=1",
		"/api/image/related/" + id + "/..",
		"/api/image/related/" + id + "/../../audio/" + id,
		"/./api/search/image/",
		"/api/search/image/./",
		`/api\search\image\`,
		"/api/search/image/?q=..%2F..%2Fadmin",
		"/api/search/%69mage/",
		"/api/%69mage/" + id,
		"//api/search/image/",
		"/api/search/image/%2e/",
	}
	allowed := regexp.MustCompile(`^/v1/(images|audio)/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}/(related/)?)?$`)
	for _, raw := range corpus {
		conn, err := net.Dial("tcp", h.public.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: openverse.test\r\nX-Forwarded-For: 203.0.113.40\r\nConnection: close\r\n\r\n", raw)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		conn.Close()
	}
	reqs := h.api.all()
	for _, r := range reqs {
		uri, _, _ := strings.Cut(r.requestURI, "?")
		if !allowed.MatchString(r.path) || !allowed.MatchString(uri) {
			t.Errorf("the API received path %q (request URI %q)", r.path, r.requestURI)
		}
	}
	if len(reqs) == 0 {
		t.Errorf("no request of the corpus reached the API: the check above checked nothing")
	}
}

// TestOpenverseEnforced: in log-only mode nothing is refused; after
// PUT /admin/mode (401 without the token) a client with a forged cookie is
// limited as sessionless, sooner than one with a real session; the
// internal listener is never limited; a page load on an exhausted session
// gets the accessible Spanish page with Retry-After. Nothing in the log
// names a client address, a session or a credential.
func TestOpenverseEnforced(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	search := "/api/search/image/?q=cat"

	// Log-only (the example's start): 100 sessionless searches all pass.
	for i := range 100 {
		if resp, _ := h.get(h.public.URL, search, "203.0.113.50"); resp.StatusCode != http.StatusOK {
			t.Fatalf("log-only request %d: %d", i+1, resp.StatusCode)
		}
	}
	if v := h.metric(decisions("api-without-session", "would_block")); v != 80 {
		t.Errorf("would_block in log-only = %v, want 80", v)
	}

	// The mode switch needs the admin token.
	rec := httptest.NewRecorder()
	h.admin.ServeHTTP(rec, httptest.NewRequest("PUT", "/admin/mode", strings.NewReader(`{"mode":"enforce"}`)))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("PUT /admin/mode without a token: %d, want 401", rec.Code)
	}
	h.setMode("enforce")
	h.clock.Add(time.Hour) // fresh windows

	admitted := func(base, ip string, hdr ...string) int {
		n := 0
		for range 100 {
			resp, body := h.get(base, search, ip, hdr...)
			switch resp.StatusCode {
			case http.StatusOK:
				n++
			case http.StatusTooManyRequests:
				if resp.Header.Get("Retry-After") == "" || !strings.Contains(resp.Header.Get("Content-Type"), "application/problem+json") {
					t.Fatalf("429 without Retry-After or problem+json: %q %s", resp.Header, body)
				}
			default:
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
		}
		return n
	}
	real := h.pageLoad("203.0.113.60")
	forged := "ovSession=" + strings.Repeat("A", 40) + "|" + strings.Repeat("B", 60)
	tampered := real[:len(real)-2] + "xx"
	if got := admitted(h.public.URL, "203.0.113.61", "Cookie", forged); got != 20 {
		t.Errorf("forged cookie: %d of 100 admitted, want 20 (the sessionless per-IP limit)", got)
	}
	if got := admitted(h.public.URL, "203.0.113.62", "Cookie", tampered); got != 20 {
		t.Errorf("tampered cookie: %d of 100 admitted, want 20", got)
	}
	// The real session: 60 searches pass (the page load that issued it
	// had no session yet, so it counted toward the ceiling only).
	if got := admitted(h.public.URL, "203.0.113.60", "Cookie", real); got != 60 {
		t.Errorf("real session: %d of 100 admitted, want 60 (60/1m)", got)
	}
	// The internal listener: never limited, even for the exhausted
	// session and the exhausted addresses, and still authenticated.
	before := len(h.api.all())
	for _, hdr := range [][]string{{"Cookie", real}, {"Cookie", forged}, nil} {
		if got := admitted(h.internal.URL, "203.0.113.61", hdr...); got != 100 {
			t.Errorf("internal listener %v: %d of 100 admitted, want 100", hdr, got)
		}
	}
	for _, r := range h.api.all()[before:] {
		if r.authorization != "Bearer gw-token-1" || r.cookie != "" {
			t.Fatalf("internal request reached the API with Authorization %q, Cookie %q", r.authorization, r.cookie)
		}
	}
	// A page load on the exhausted session, in Spanish.
	resp, body := h.get(h.public.URL, "/search?q=gato", "203.0.113.60",
		"Cookie", real, "Accept", "text/html", "Accept-Language", "es-ES,es;q=0.9")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("page load on an exhausted session: %d", resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After %q", ra)
	}
	for _, want := range []string{`<html lang="es">`, `role="alert"`, "Está buscando más rápido"} {
		if !strings.Contains(body, want) {
			t.Errorf("Spanish page lacks %q:\n%s", want, body)
		}
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}

	// No client address, session value or credential in the logs.
	logs := h.logs.String()
	if !strings.Contains(logs, `"decision":"blocked"`) {
		t.Fatalf("the log has no blocked decision: the check below would check nothing:\n%.2000s", logs)
	}
	secrets := []string{"203.0.113.", strings.TrimPrefix(real, "ovSession="), strings.TrimPrefix(forged, "ovSession="),
		"gw-token", ovClientSecret, ovSigning, ovAdminToken}
	if i := strings.Index(strings.TrimPrefix(real, "ovSession="), "|"); i > 0 {
		secrets = append(secrets, strings.TrimPrefix(real, "ovSession=")[:i])
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains %q", s)
		}
	}
}

// TestOpenverseTokenEndpointDown: without a token the API routes answer
// 503 with Retry-After, nothing reaches the API, and the fetches back off.
func TestOpenverseTokenEndpointDown(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.api.tokenDown.Store(true)
	for range 5 {
		resp, body := h.get(h.public.URL, "/api/search/image/?q=cat", "203.0.113.70", "Accept", "application/json")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("token endpoint down: %d (Retry-After %q) %s, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	if reqs := h.api.all(); len(reqs) != 0 {
		t.Errorf("%d requests reached the API without a token", len(reqs))
	}
	// Pages still load.
	if resp, _ := h.get(h.public.URL, "/", "203.0.113.70"); resp.StatusCode != http.StatusOK {
		t.Errorf("page load while the token endpoint is down: %d", resp.StatusCode)
	}
	// The failure is counted, once: the other requests met the backoff.
	const fetches = `floodgate_upstream_token_fetches_total{result="%s",upstream="api"}`
	if f, s := h.metric(fmt.Sprintf(fetches, "failure")), h.metric(fmt.Sprintf(fetches, "success")); f != 1 || s != 0 {
		t.Errorf("token fetches: %v failed, %v succeeded; want 1 and 0", f, s)
	}
	// Once the endpoint is back and the backoff over, searches work.
	h.api.tokenDown.Store(false)
	h.clock.Add(10 * time.Minute)
	if resp, _ := h.get(h.public.URL, "/api/search/image/?q=cat", "203.0.113.70"); resp.StatusCode != http.StatusOK {
		t.Errorf("after recovery: %d", resp.StatusCode)
	}
	if f, s := h.metric(fmt.Sprintf(fetches, "failure")), h.metric(fmt.Sprintf(fetches, "success")); f != 1 || s != 1 {
		t.Errorf("token fetches after recovery: %v failed, %v succeeded; want 1 and 1", f, s)
	}
}

// TestOpenverseTokenBackoffRetryAfter: while the token endpoint is in
// backoff, the 503's Retry-After says when the next fetch will be tried,
// in whole seconds rounded up, at least 1.
func TestOpenverseTokenBackoffRetryAfter(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.api.tokenDown.Store(true)
	steps := []struct {
		advance time.Duration
		retry   string
		fetches float64 // failed, so far
	}{
		{0, "1", 1},                      // fails: backoff 1 s
		{400 * time.Millisecond, "1", 1}, // 0.6 s left
		{600 * time.Millisecond, "2", 2}, // fails again: backoff 2 s
		{100 * time.Millisecond, "2", 2}, // 1.9 s left
		{1500 * time.Millisecond, "1", 2},
		{400 * time.Millisecond, "4", 3},  // backoff 4 s
		{1700 * time.Millisecond, "3", 3}, // 2.3 s left
	}
	for i, st := range steps {
		h.clock.Add(st.advance)
		resp, body := h.get(h.public.URL, "/api/search/image/?q=cat", "203.0.113.72", "Accept", "application/json")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != st.retry {
			t.Errorf("step %d: %d, Retry-After %q (%s); want 503, Retry-After %s", i+1, resp.StatusCode, resp.Header.Get("Retry-After"), body, st.retry)
		}
		if f := h.metric(`floodgate_upstream_token_fetches_total{result="failure",upstream="api"}`); f != st.fetches {
			t.Errorf("step %d: %v failed fetches, want %v", i+1, f, st.fetches)
		}
	}
}

// TestOpenverseSlowTokenRefresh: while a refresh waits on a slow token
// endpoint, API requests go on with the token that is still valid,
// including the one whose arrival started the refresh.
func TestOpenverseSlowTokenRefresh(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	if resp, _ := h.get(h.public.URL, "/api/search/image/?q=cat", "203.0.113.71"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first search: %d", resp.StatusCode)
	}
	held, release := h.api.holdTokens(t)
	h.clock.Add(36000*time.Second - time.Minute)      // due for refresh, valid for a minute more
	client := &http.Client{Timeout: 10 * time.Second} // a bound, not a measure
	for i := range 3 {
		req, _ := http.NewRequest("GET", h.public.URL+"/api/search/image/?q=cat", nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.71")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("search %d during the refresh: %v (held for the token endpoint)", i+1, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("search %d during the refresh: %d, want 200", i+1, resp.StatusCode)
		}
	}
	<-held // the refresh did start, and is still held
	reqs := h.api.all()
	for _, r := range reqs {
		if r.authorization != "Bearer gw-token-1" {
			t.Errorf("the API saw %q, want the valid gw-token-1", r.authorization)
		}
	}
	if len(reqs) != 4 {
		t.Errorf("%d requests reached the API, want 4", len(reqs))
	}
	release()
}

// TestOpenverseRevokedToken: the API's 401 to a request that carried
// floodgate's own token (revoked or rotated on the API's side) never
// reaches the client, who did nothing wrong. A search is sent once more
// with a new token; if that one is refused too, the client gets 503 with
// Retry-After, counted as an upstream failure, and the token endpoint is
// asked at most once per 30 s.
func TestOpenverseRevokedToken(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	const search = "/api/search/image/?q=cat"
	const failures = `floodgate_upstream_errors_total{kind="unreachable",upstream="api"}`
	if resp, _ := h.get(h.public.URL, search, "203.0.113.73"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first search: %d", resp.StatusCode)
	}

	// gw-token-1 revoked: the search goes through with gw-token-2.
	h.api.revoked.Store(1)
	h.clock.Add(time.Minute)
	resp, body := h.get(h.public.URL, search, "203.0.113.73")
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "Invalid token") {
		t.Errorf("search after the token was revoked: %d %s, want 200 with the API's results", resp.StatusCode, body)
	}
	var auths []string
	for _, r := range h.api.all() {
		auths = append(auths, r.authorization)
	}
	if want := []string{"Bearer gw-token-1", "Bearer gw-token-1", "Bearer gw-token-2"}; !slices.Equal(auths, want) {
		t.Errorf("the API saw %q, want %q", auths, want)
	}

	// Every token refused: 503, never the API's 401.
	h.api.deny.Store(true)
	h.clock.Add(time.Minute)
	for i, retry := range []string{"30", "30"} {
		resp, body := h.get(h.public.URL, search, "203.0.113.73", "Accept", "application/json")
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != retry ||
			strings.Contains(body, "Invalid token") || resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("search %d with every token refused: %d, Retry-After %q, WWW-Authenticate %q, %s; want floodgate's 503 with Retry-After %s",
				i+1, resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("WWW-Authenticate"), body, retry)
		}
	}
	if n := h.api.fetches.Load(); n != 3 {
		t.Errorf("%d token fetches, want 3: a token younger than 30 s is not dropped", n)
	}
	if f := h.metric(failures); f != 2 {
		t.Errorf("%s = %v, want 2", failures, f)
	}
	h.api.deny.Store(false)
	if resp, _ := h.get(h.public.URL, search, "203.0.113.73"); resp.StatusCode != http.StatusOK {
		t.Errorf("search once the API takes the token again: %d", resp.StatusCode)
	}
}

// TestOpenverseDevelopmentKeepsTheAPIs401: without floodgate's own
// credentials (development), the API's 401 is its answer to the
// request as sent, and reaches the client.
func TestOpenverseDevelopmentKeepsTheAPIs401(t *testing.T) {
	h := newOpenverse(t, "development", map[string]string{"API_CLIENT_ID": "", "API_CLIENT_SECRET": "", "HMAC_SIGNING_SECRET": ""})
	h.api.deny.Store(true)
	resp, body := h.get(h.public.URL, "/api/search/audio/?q=rain", "203.0.113.81")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Invalid token") {
		t.Errorf("search: %d %s, want the API's 401", resp.StatusCode, body)
	}
}

// readyz returns the admin listener's /readyz status and body.
func (h *ovHarness) readyz() (int, string) {
	rec := httptest.NewRecorder()
	h.admin.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	return rec.Code, rec.Body.String()
}

// TestOpenverseReadinessNeedsAToken: a replica whose credentials the
// token endpoint refuses is not ready, and /readyz says why without the
// credentials or the endpoint's address; readiness fetches a token (the
// first is otherwise fetched by the first request) but never during the
// backoff.
func TestOpenverseReadinessNeedsAToken(t *testing.T) {
	h := newOpenverse(t, "production", map[string]string{"API_CLIENT_SECRET": "a-wrong-secret-0123456789"})
	const failed = `floodgate_upstream_token_fetches_total{result="failure",upstream="api"}`
	u, _ := url.Parse(h.api.URL)
	clean := func(body string) bool {
		return !strings.Contains(body, "a-wrong-secret") && !strings.Contains(body, ovClientID) && !strings.Contains(body, u.Hostname())
	}
	steps := []struct {
		advance time.Duration
		want    string
		fetches float64
	}{
		{0, "not ready: upstream api: no token: 1 failed fetch, the last: the token endpoint answered 401 invalid_client; next attempt in 1s", 1},
		{500 * time.Millisecond, "not ready: upstream api: no token: 1 failed fetch, the last: the token endpoint answered 401 invalid_client; next attempt in 1s", 1},
		{500 * time.Millisecond, "not ready: upstream api: no token: 2 failed fetches, the last: the token endpoint answered 401 invalid_client; next attempt in 2s", 2},
	}
	for i, st := range steps {
		h.clock.Add(st.advance)
		code, body := h.readyz()
		if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != st.want || !clean(body) {
			t.Errorf("step %d: /readyz = %d %q, want 503 %q", i+1, code, body, st.want)
		}
		if f := h.metric(failed); f != st.fetches {
			t.Errorf("step %d: %v failed fetches, want %v", i+1, f, st.fetches)
		}
	}
}

// TestOpenverseReadinessAfterAToken: a replica that has had a token since
// start is ready, with no fetch while the token is valid; once it has
// had one, a token endpoint down for longer than the token lives leaves
// it ready, saying so, since every replica shares that endpoint and
// taking them all out of the load balancer would take the pages down
// with the API.
func TestOpenverseReadinessAfterAToken(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.api.tokenDown.Store(true)
	if code, body := h.readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "answered 500") {
		t.Errorf("/readyz with the token endpoint down since start: %d %q, want 503", code, body)
	}
	h.api.tokenDown.Store(false)
	h.clock.Add(time.Second)
	if code, body := h.readyz(); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz once the token endpoint answers: %d %q, want 200 ready", code, body)
	}
	for range 3 {
		if code, _ := h.readyz(); code != http.StatusOK {
			t.Errorf("/readyz with a valid token: %d", code)
		}
	}
	if n := h.api.fetches.Load(); n != 1 {
		t.Errorf("%d tokens fetched, want 1: a valid token is not fetched again", n)
	}
	h.api.tokenDown.Store(true)
	h.clock.Add(36000 * time.Second) // expired
	code, body := h.readyz()
	if code != http.StatusOK || !strings.HasPrefix(body, "ready; upstream api: no token: ") {
		t.Errorf("/readyz with the token expired and the endpoint down: %d %q, want 200 saying there is no token", code, body)
	}
	if resp, _ := h.get(h.public.URL, "/api/search/image/?q=cat", "203.0.113.74"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("search with no token: %d, want 503", resp.StatusCode)
	}
}

// TestOpenverseDevelopmentWithoutCredentials: in development, without
// API_CLIENT_ID and API_CLIENT_SECRET, requests go to the API
// unauthenticated (and still without the browser's credentials).
func TestOpenverseDevelopmentWithoutCredentials(t *testing.T) {
	h := newOpenverse(t, "development", map[string]string{"API_CLIENT_ID": "", "API_CLIENT_SECRET": "", "HMAC_SIGNING_SECRET": ""})
	cookie := h.pageLoad("203.0.113.80")
	resp, _ := h.get(h.public.URL, "/api/search/audio/?q=rain", "203.0.113.80", "Cookie", cookie, "Authorization", "Bearer browser")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("search: %d", resp.StatusCode)
	}
	reqs := h.api.all()
	if len(reqs) != 1 || reqs[0].authorization != "" || reqs[0].cookie != "" || h.api.fetches.Load() != 0 {
		t.Errorf("development without credentials: %+v, %d token fetches; want one unauthenticated request", reqs, h.api.fetches.Load())
	}
}

// TestOpenverseProductionNeedsCredentials: every environment but
// development refuses to load without the client credentials, naming the
// missing variable.
func TestOpenverseProductionNeedsCredentials(t *testing.T) {
	for _, env := range []string{"production", "staging", ""} {
		vars := map[string]string{"FLOODGATE_ADMIN_TOKEN": ovAdminToken, "HMAC_SIGNING_SECRET": ovSigning, "API_CLIENT_SECRET": ovClientSecret}
		_, err := config.Load(openverse, env, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err == nil || !strings.Contains(err.Error(), "API_CLIENT_ID") {
			t.Errorf("env %q without API_CLIENT_ID: %v, want an error naming API_CLIENT_ID", env, err)
		}
	}
}

// TestOpenverseSessionsPerIP: the distribution of sessions per address
// shows a school behind one address, without any address.
func TestOpenverseSessionsPerIP(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	for range 30 { // a class behind one address
		h.pageLoad("198.51.100.1")
	}
	for i := range 5 { // five homes
		h.pageLoad(fmt.Sprintf("198.51.100.%d", 10+i))
	}
	h.clock.Add(time.Hour) // the window completes
	h.get(h.public.URL, "/_nuxt/app.js", "198.51.100.99")
	if v := h.metric("floodgate_sessions_per_ip_count"); v != 6 {
		t.Errorf("addresses in the distribution: %v, want 6", v)
	}
	if v := h.metric(`floodgate_sessions_per_ip_bucket{le="1"}`); v != 5 {
		t.Errorf("addresses with one session: %v, want 5", v)
	}
	if v := h.metric(`floodgate_sessions_per_ip_bucket{le="16"}`); v != 5 {
		t.Errorf("addresses with at most 16: %v, want 5", v)
	}
	if v := h.metric(`floodgate_sessions_per_ip_bucket{le="32"}`); v != 6 {
		t.Errorf("addresses with at most 32: %v, want 6", v)
	}
	rec := httptest.NewRecorder()
	h.admin.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(rec.Body.String(), "198.51.100.") {
		t.Errorf("/metrics names a client address")
	}
}

// TestOpenverseSessionCap: with sessions.per_ip.max_new, an address over
// the cap is served without a new session.
func TestOpenverseSessionCap(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	f2, err := config.Load(openverse, "production", func(k string) (string, bool) {
		switch k {
		case "FLOODGATE_API_UPSTREAM":
			return h.api.URL, true
		case "FLOODGATE_FRONTEND_UPSTREAM":
			return h.front.URL, true
		case "FLOODGATE_TRUSTED_PROXIES":
			return "127.0.0.0/8", true
		case "FLOODGATE_ADMIN_TOKEN":
			return ovAdminToken, true
		case "HMAC_SIGNING_SECRET":
			return ovSigning, true
		case "API_CLIENT_ID":
			return ovClientID, true
		case "API_CLIENT_SECRET":
			return ovClientSecret, true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	f2.Config.Sessions.PerIP.MaxNew = 3
	f2.Config.ApplyDefaults()
	if _, problems := h.srv.Reload(f2, []byte("capped")); len(problems) > 0 {
		t.Fatal(problems)
	}
	issued := 0
	for range 10 {
		resp, _ := h.get(h.public.URL, "/", "198.51.100.50", "Accept", "text/html")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("page load: %d", resp.StatusCode)
		}
		for _, c := range resp.Cookies() {
			if c.Name == "ovSession" {
				issued++
			}
		}
	}
	if issued != 3 || h.metric("floodgate_sessions_refused_total") != 7 {
		t.Errorf("%d sessions issued, %v refused; want 3 and 7", issued, h.metric("floodgate_sessions_refused_total"))
	}
}

// TestPlansByBearerToken: an API client named by its token is held to its
// plan (standard 100/1m, enhanced 200/1m), an exempt one is not, and an
// unknown token is no client at all: the per-IP rule applies to it.
func TestPlansByBearerToken(t *testing.T) {
	up := newUpstream(t)
	hash := func(tok string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(tok))) }
	yml := fmt.Sprintf(`
upstreams: {api: {url: %q}}
client_ip: {trusted_proxies: [127.0.0.0/8]}
api_clients:
  plans: {standard: [100/1m, 10000/1d], enhanced: [200/1m, 20000/1d], exempt: []}
  clients:
    - {id: lab, plan: standard, token_sha256: %s}
    - {id: partner, plan: enhanced, token_sha256: %s}
    - {id: internal-tool, plan: exempt, token_sha256: %s}
rules:
  - {name: anonymous, when: "api_client.id == ''", limits: [30/1m]}
  - {name: api-client-plan, key: [api_client], limits_from: plan}
`, up.URL, hash("lab-token"), hash("partner-token"), hash("tool-token"))
	f, err := config.Parse("plans.yaml", []byte(yml), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	c := newClock()
	metrics := telemetry.NewMetrics("test")
	g, problems := gateway.New(f, gateway.Options{Store: gateway.NewMemoryStore(1<<16, c.Now, metrics), Metrics: metrics,
		Logger: telemetry.NewLogger(io.Discard, "info"), Now: c.Now})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	gw := newFront(t, g)
	defer gw.Close()
	admitted := func(ip, token string) (int, *http.Response) {
		n := 0
		var last *http.Response
		for range 300 {
			req, _ := http.NewRequest("GET", gw.URL+"/v1/images/", nil)
			req.Header.Set("X-Forwarded-For", ip)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				n++
			} else {
				last = resp
			}
		}
		return n, last
	}
	for _, tc := range []struct {
		ip, token string
		want      int
	}{
		{"192.0.2.1", "lab-token", 100}, {"192.0.2.2", "partner-token", 200}, {"192.0.2.3", "tool-token", 300},
		{"192.0.2.4", "forged-token", 30}, {"192.0.2.5", "", 30},
	} {
		n, last := admitted(tc.ip, tc.token)
		if n != tc.want {
			t.Errorf("token %q: %d of 300 admitted, want %d", tc.token, n, tc.want)
		}
		if tc.token == "lab-token" && last != nil && !strings.Contains(last.Header.Get("RateLimit-Policy"), "api-client-plan.standard") {
			t.Errorf("lab's 429 has RateLimit-Policy %q", last.Header.Get("RateLimit-Policy"))
		}
	}
}

// TestPlanUsageSeriesFollowReloads: floodgate_plan_usage_ratio keeps a
// series per client and plan; a reload that removes a client, or moves
// it to another plan, drops the series the configuration no longer has
// (before: they stayed exported, and alerting, until a restart).
func TestPlanUsageSeriesFollowReloads(t *testing.T) {
	up := newUpstream(t)
	hash := func(tok string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(tok))) }
	conf := func(clients string) (*config.File, []byte) {
		yml := fmt.Sprintf(`
upstreams: {api: {url: %q}}
api_clients:
  plans: {standard: [100/1m], enhanced: [200/1m]}
  clients:
%s
rules:
  - {name: api-client-plan, key: [api_client], limits_from: plan}
`, up.URL, clients)
		f, err := config.Parse("plans.yaml", []byte(yml), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Config.ApplyDefaults()
		return f, []byte(yml)
	}
	lab := fmt.Sprintf("    - {id: lab, plan: standard, token_sha256: %s}\n", hash("lab-token"))
	partner := fmt.Sprintf("    - {id: partner, plan: enhanced, token_sha256: %s}\n", hash("partner-token"))
	labEnhanced := fmt.Sprintf("    - {id: lab, plan: enhanced, token_sha256: %s}\n", hash("lab-token"))
	c := newClock()
	metrics := telemetry.NewMetrics("test")
	f, data := conf(lab + partner)
	srv, problems := gateway.NewServer(f, data, gateway.Options{Store: gateway.NewMemoryStore(1<<16, c.Now, metrics),
		Metrics: metrics, Logger: telemetry.NewLogger(io.Discard, "info"), Now: c.Now})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	gw := newFront(t, srv)
	get := func(token string) {
		req, _ := http.NewRequest("GET", gw.URL+"/v1/images/", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	series := func() string {
		var out []string
		rec := httptest.NewRecorder()
		admin.Handler(admin.Options{Gatherer: metrics.Registry}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, "floodgate_plan_usage_ratio{") {
				out = append(out, line[:strings.Index(line, "}")+1])
			}
		}
		return strings.Join(out, " ")
	}
	get("lab-token")
	get("partner-token")
	want := `floodgate_plan_usage_ratio{client="lab",plan="standard"} floodgate_plan_usage_ratio{client="partner",plan="enhanced"}`
	if got := series(); got != want {
		t.Fatalf("before the reload: %s, want %s", got, want)
	}
	// partner removed, lab moved to enhanced.
	f, data = conf(labEnhanced)
	if _, problems := srv.Reload(f, data); len(problems) > 0 {
		t.Fatal(problems)
	}
	if got := series(); got != "" {
		t.Errorf("after the reload: %s, want no series until the clients' next requests", got)
	}
	get("lab-token")
	if got, want := series(), `floodgate_plan_usage_ratio{client="lab",plan="enhanced"}`; got != want {
		t.Errorf("after lab's next request: %s, want %s", got, want)
	}
}

// TestOpenverseInternalCallsCountTowardsThePlan: server-side rendering's
// calls on the internal listener carry the frontend's credentials, so the
// API's own limit for the frontend counts them; the frontend's plan at the
// gateway (api-client-plan, floodgate_plan_usage_ratio) counts them too,
// or its alert would come after the API's limit. The visitor's counters
// (per visitor cookie, per IP) never count them: their page load was
// counted.
func TestOpenverseInternalCallsCountTowardsThePlan(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.setMode("enforce")
	search := "/api/search/image/?q=cat"
	real := h.pageLoad("203.0.113.70")
	for i := range 100 {
		if resp, body := h.get(h.internal.URL, search, "203.0.113.70", "Cookie", real); resp.StatusCode != http.StatusOK {
			t.Fatalf("internal call %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	// listener="gateway" counts the public and internal listeners; no
	// public API call has been made yet.
	plan := `floodgate_rule_decisions_total{decision="allowed",listener="gateway",rule="api-client-plan.frontend"}`
	if v := h.metric(plan); v != 100 {
		t.Errorf("%s = %v, want 100: the frontend's plan does not see the calls made with its credentials", plan, v)
	}
	if v := h.metric(`floodgate_plan_usage_ratio{client="openverse.org",plan="frontend"}`); v < 100.0/3000 {
		t.Errorf("frontend plan usage = %v after 100 internal calls, want at least %v", v, 100.0/3000)
	}
	// The visitor's own limits are untouched: the visitor still has its
	// 60 searches a minute, the address its 20 without a cookie.
	n := 0
	for range 61 {
		if resp, _ := h.get(h.public.URL, search, "203.0.113.70", "Cookie", real); resp.StatusCode == http.StatusOK {
			n++
		}
	}
	if n != 60 {
		t.Errorf("after 100 internal calls, the visitor was admitted %d of 61 searches, want 60", n)
	}
	n = 0
	for range 21 {
		if resp, _ := h.get(h.public.URL, search, "203.0.113.70"); resp.StatusCode == http.StatusOK {
			n++
		}
	}
	if n != 20 {
		t.Errorf("after 100 internal calls, the address was admitted %d of 21 searches without a cookie, want 20", n)
	}
}

// TestOpenverseEveryPageRequestCounts: the frontend renders a page for a
// HEAD or a POST as for a GET, with the same server-side calls to the API,
// so those are counted like page loads: a client whose visitor counter is
// spent gets 429 for them too, and one without a cookie counts toward its
// address's ceiling. Only a GET is given a new cookie.
func TestOpenverseEveryPageRequestCounts(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.setMode("enforce")
	send := func(method, path, ip string, hdr ...string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, h.public.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", ip)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Add(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	ceiling := decisions("per-ip-ceiling", "allowed")
	before := h.metric(ceiling)
	for _, m := range []string{"HEAD", "POST", "PUT", "DELETE", "OPTIONS"} {
		resp := send(m, "/search?q=cat", "203.0.113.80")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s /search without a cookie: %d", m, resp.StatusCode)
		}
		if c := resp.Header.Values("Set-Cookie"); slices.ContainsFunc(c, func(s string) bool { return strings.HasPrefix(s, "ovSession=") }) {
			t.Errorf("%s /search was given a new cookie: %q", m, c)
		}
	}
	if got := h.metric(ceiling) - before; got != 5 {
		t.Errorf("5 page requests other than GET moved the per-IP ceiling by %v, want 5", got)
	}

	cookie := h.pageLoad("203.0.113.81")
	for i := range 60 {
		if resp := send("GET", "/api/search/image/?q=cat", "203.0.113.81", "Cookie", cookie); resp.StatusCode != http.StatusOK {
			t.Fatalf("search %d: %d", i+1, resp.StatusCode)
		}
	}
	for _, m := range []string{"GET", "HEAD", "POST"} {
		if resp := send(m, "/search?q=cat", "203.0.113.81", "Cookie", cookie); resp.StatusCode != http.StatusTooManyRequests {
			t.Errorf("%s /search with a spent visitor counter: %d, want 429", m, resp.StatusCode)
		}
	}
}

// TestOpenverseFrontendPlanMessage: once the frontend's plan is spent,
// every visitor's API call is refused, however few it made: the answer
// says the site's share of the API is spent, not that the visitor sent
// too many requests, in English and in Spanish.
func TestOpenverseFrontendPlanMessage(t *testing.T) {
	h := newOpenverse(t, "production", nil)
	h.setMode("enforce")
	search := "/api/search/image/?q=cat"
	// Server-side rendering spends the plan (3000/1m) on the internal
	// listener, where no visitor rule counts.
	for i := range 3000 {
		if resp, body := h.get(h.internal.URL, search, "127.0.0.1"); resp.StatusCode != http.StatusOK {
			t.Fatalf("internal call %d: %d %s", i+1, resp.StatusCode, body)
		}
	}
	cookie := h.pageLoad("203.0.113.90")
	for _, lang := range []struct{ accept, want string }{
		{"en", "share of the API"},
		{"es", "parte de la API"},
	} {
		resp, body := h.get(h.public.URL, search, "203.0.113.90", "Cookie", cookie, "Accept-Language", lang.accept)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a visitor's first search with the plan spent: %d, want 429", resp.StatusCode)
		}
		if !strings.Contains(body, `"rule":"api-client-plan`) {
			t.Fatalf("refused by another rule than the plan's: %s", body)
		}
		if strings.Contains(body, "You have sent") || strings.Contains(body, "Ha enviado") || !strings.Contains(body, lang.want) {
			t.Errorf("Accept-Language %s: the answer blames the visitor or lacks %q: %s", lang.accept, lang.want, body)
		}
	}
}
