package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

const token = "0123456789abcdef-admin"

// newAdmin builds a Server from yaml and the admin handler around it.
func newAdmin(t *testing.T, yaml string, ready func(context.Context) error) (http.Handler, *gateway.Server) {
	t.Helper()
	return newAdminWith(t, yaml, func(o *admin.Options) { o.Ready = ready })
}

// newAdminWith is newAdmin with the handler's options set by opt.
func newAdminWith(t *testing.T, yaml string, opt func(*admin.Options)) (http.Handler, *gateway.Server) {
	t.Helper()
	vars := map[string]string{"TOKEN": token}
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
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
	o := admin.Options{Gatherer: m.Registry, Server: srv}
	opt(&o)
	return admin.Handler(o), srv
}

const withToken = `
admin: {token: "${TOKEN}"}
store: {url: memory}
upstreams: {api: {url: "http://127.0.0.1:8081"}}
rules:
  - {name: bots, when: "request.user_agent.contains('GPTBot')", action: deny}
  - {name: per-ip, limits: [10/1m]}
`

// adminHost is the Host of a request to the default admin listener.
const adminHost = "127.0.0.1:9090"

func do(h http.Handler, method, path, auth, body, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = adminHost
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if remote != "" {
		r.RemoteAddr = remote
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAuth(t *testing.T) {
	h, _ := newAdmin(t, withToken, nil)
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"metrics open", "GET", "/metrics", "", 200},
		{"healthz open", "GET", "/healthz", "", 200},
		{"readyz open", "GET", "/readyz", "", 200},
		{"config without token", "GET", "/admin/config", "", 401},
		{"config wrong token", "GET", "/admin/config", "Bearer nope", 401},
		{"config basic auth", "GET", "/admin/config", "Basic " + token, 401},
		{"config with token", "GET", "/admin/config", "Bearer " + token, 200},
		{"config with token, lower-case scheme", "GET", "/admin/config", "bearer " + token, 200},
		{"config with token, upper-case scheme", "GET", "/admin/config", "BEARER " + token, 200},
		{"config with token and trailing junk", "GET", "/admin/config", "Bearer " + token + " junk", 401},
		{"config with the scheme alone", "GET", "/admin/config", "Bearer", 401},
		{"mode without token", "PUT", "/admin/mode", "", 401},
		{"explain without token", "POST", "/admin/explain", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if w := do(h, tc.method, tc.path, tc.auth, "", ""); w.Code != tc.want {
				t.Errorf("%s %s: %d, want %d (%s)", tc.method, tc.path, w.Code, tc.want, w.Body)
			}
		})
	}
}

func TestUnauthorizedSaysWhy(t *testing.T) {
	// Missing and wrong credentials are told apart (RFC 6750 section 3.1),
	// and neither answer echoes what was sent.
	h, _ := newAdmin(t, withToken, nil)
	w := do(h, "GET", "/admin/config", "", "", "")
	if got := w.Header().Get("WWW-Authenticate"); w.Code != 401 || got != `Bearer realm="floodgate admin"` ||
		!strings.Contains(w.Body.String(), "header with the admin token is required") {
		t.Errorf("no credentials: %d, WWW-Authenticate %q, %s", w.Code, got, w.Body)
	}
	for _, auth := range []string{"Bearer wrongwrongwrongwrong", "Basic " + token, "Bearer"} {
		w := do(h, "GET", "/admin/config", auth, "", "")
		if got := w.Header().Get("WWW-Authenticate"); w.Code != 401 || got != `Bearer realm="floodgate admin", error="invalid_token"` ||
			!strings.Contains(w.Body.String(), "does not carry the admin token") || strings.Contains(w.Body.String(), "wrongwrong") {
			t.Errorf("%q: %d, WWW-Authenticate %q, %s", auth, w.Code, got, w.Body)
		}
	}
}

func TestNoTokenMeansLoopbackOnly(t *testing.T) {
	h, _ := newAdmin(t, `upstreams: {api: {url: "http://127.0.0.1:8081"}}`, nil)
	if w := do(h, "GET", "/admin/mode", "", "", "127.0.0.1:5000"); w.Code != 200 {
		t.Errorf("loopback peer: %d, want 200", w.Code)
	}
	if w := do(h, "GET", "/admin/mode", "", "", "[::1]:5000"); w.Code != 200 {
		t.Errorf("IPv6 loopback peer: %d, want 200", w.Code)
	}
	if w := do(h, "GET", "/admin/mode", "", "", "192.0.2.1:5000"); w.Code != 403 {
		t.Errorf("remote peer: %d, want 403", w.Code)
	}
	// A forwarding header grants nothing.
	r := httptest.NewRequest("GET", "/admin/mode", nil)
	r.Host = adminHost
	r.RemoteAddr = "192.0.2.1:5000"
	r.Header.Set("X-Forwarded-For", "127.0.0.1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 403 {
		t.Errorf("remote peer claiming loopback in X-Forwarded-For: %d, want 403", w.Code)
	}
}

// TestNoTokenRefusesOtherSites: without a token, a loopback peer is the
// operator only when it addresses this machine by a loopback name and,
// for a change, comes from no other site's page. A page whose name was
// rebound to 127.0.0.1 (DNS rebinding), or a page of another site posting
// to 127.0.0.1, is a loopback peer too, in the operator's browser.
func TestNoTokenRefusesOtherSites(t *testing.T) {
	h, srv := newAdmin(t, `upstreams: {api: {url: "http://127.0.0.1:8081"}}`, nil)
	send := func(method, path, host, body string, hdr ...string) int {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Host = host
		r.RemoteAddr = "127.0.0.1:5000"
		for _, kv := range hdr {
			k, v, _ := strings.Cut(kv, ": ")
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	const rebound = "rebind.attacker.example:9090"
	for _, tc := range []struct {
		name, method, path, host, body string
		hdr                            []string
		want                           int
	}{
		{"rebound page switches the mode", "PUT", "/admin/mode", rebound, "log-only",
			[]string{"Origin: http://" + rebound, "Sec-Fetch-Site: same-origin"}, 403},
		{"rebound page reads the configuration", "GET", "/admin/config", rebound, "", nil, 403},
		{"rebound page reads the dashboard", "GET", "/admin/", rebound, "", nil, 403},
		{"rebound page explains", "POST", "/admin/explain", rebound, `{"path":"/"}`, nil, 403},
		{"another site posts to loopback", "POST", "/admin/explain", "127.0.0.1:9090", `{"path":"/"}`,
			[]string{"Origin: https://attacker.example", "Sec-Fetch-Site: cross-site"}, 403},
		{"another site's Origin alone", "PUT", "/admin/mode", "127.0.0.1:9090", "log-only",
			[]string{"Origin: https://attacker.example"}, 403},
		{"curl by address", "PUT", "/admin/mode", "127.0.0.1:9090", "enforce", nil, 200},
		{"curl by name", "GET", "/admin/config", "localhost:9090", "", nil, 200},
		{"IPv6", "GET", "/admin/mode", "[::1]:9090", "", nil, 200},
		{"the dashboard's own switch", "PUT", "/admin/mode", "127.0.0.1:9090", "enforce",
			[]string{"Origin: http://127.0.0.1:9090", "Sec-Fetch-Site: same-origin"}, 200},
	} {
		if got := send(tc.method, tc.path, tc.host, tc.body, tc.hdr...); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if srv.LogOnly() {
		t.Error("a page of another site switched the gateway to log-only")
	}
}

func TestConfigRedactsSecrets(t *testing.T) {
	h, _ := newAdmin(t, withToken, nil)
	w := do(h, "GET", "/admin/config", "Bearer "+token, "", "")
	body := w.Body.String()
	if strings.Contains(body, token) {
		t.Errorf("secret in /admin/config:\n%s", body)
	}
	for _, want := range []string{`"token": "[redacted]"`, `"hash": "sha256:`, `"name": "per-ip"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/admin/config lacks %q:\n%s", want, body)
		}
	}
}

func TestModeSwitch(t *testing.T) {
	h, srv := newAdmin(t, withToken, nil)
	auth := "Bearer " + token
	if w := do(h, "PUT", "/admin/mode", auth, "log-only", ""); w.Code != 200 {
		t.Fatalf("PUT log-only: %d %s", w.Code, w.Body)
	}
	if !srv.LogOnly() {
		t.Error("mode not switched to log-only")
	}
	// A denied request is now only a would-block: explain says so.
	w := do(h, "POST", "/admin/explain", auth, `{"method":"GET","path":"/x","headers":{"User-Agent":"GPTBot"}}`, "")
	if !strings.Contains(w.Body.String(), `"decision": "would_block"`) || !strings.Contains(w.Body.String(), `"verdict": "forward to upstream api"`) {
		t.Errorf("explain in log-only:\n%s", w.Body)
	}
	if w := do(h, "PUT", "/admin/mode", auth, `{"mode":"enforce"}`, ""); w.Code != 200 || srv.LogOnly() {
		t.Errorf("PUT enforce (JSON): %d, log-only %v", w.Code, srv.LogOnly())
	}
	if w := do(h, "PUT", "/admin/mode", auth, "panic", ""); w.Code != 400 {
		t.Errorf("PUT panic: %d, want 400", w.Code)
	}
	w = do(h, "GET", "/admin/mode", auth, "", "")
	var got struct{ Mode string }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Mode != "enforce" {
		t.Errorf("GET /admin/mode = %s, %v", w.Body, err)
	}
}

func TestExplainLiveCounters(t *testing.T) {
	h, srv := newAdmin(t, withToken, nil)
	// Ten requests from one client through the gateway use its quota.
	for range 10 {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = "198.51.100.7:4000"
		srv.ServeHTTP(httptest.NewRecorder(), r)
	}
	w := do(h, "POST", "/admin/explain", "Bearer "+token, `{"method":"GET","path":"/x","ip":"198.51.100.7"}`, "")
	var ex gateway.Explanation
	if err := json.Unmarshal(w.Body.Bytes(), &ex); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	if ex.Verdict != "429 by rule per-ip" {
		t.Errorf("verdict %q, want 429 by rule per-ip", ex.Verdict)
	}
	if r := ex.Rules[1]; r.Remaining == nil || *r.Remaining != 0 || r.KeyHash == "" {
		t.Errorf("per-ip = %+v, want remaining 0 and a key hash", r)
	}
	if strings.Contains(w.Body.String(), "198.51.100.7") {
		t.Error("explain echoed the client address")
	}
	for _, bad := range []string{`{"path":"x"}`, `{"path":"/","ip":"nope"}`, `{"path":"/","extra":1}`, `not json`} {
		if w := do(h, "POST", "/admin/explain", "Bearer "+token, bad, ""); w.Code != 400 {
			t.Errorf("explain %s: %d, want 400", bad, w.Code)
		}
	}
}

// TestReadyzWithStoreDown: a store that does not answer is shown, and the
// gateway stays ready (admin.Options.Store says why); shutting down is
// what makes it unready.
func TestReadyzWithStoreDown(t *testing.T) {
	storeDown := func(context.Context) error { return errors.New("connection refused (store.failure_policy fail_open)") }
	h, _ := newAdminWith(t, withToken, func(o *admin.Options) { o.Store = storeDown })
	w := do(h, "GET", "/readyz", "", "", "")
	if body := w.Body.String(); w.Code != 200 || body != "ready; store: not answering (the dashboard says why)\n" {
		t.Errorf("readyz with the store down: %d %q, want 200 saying the store does not answer, not its error", w.Code, body)
	}
	h, _ = newAdminWith(t, withToken, func(o *admin.Options) {
		o.Store = storeDown
		o.Ready = func(context.Context) error { return errors.New("shutting down") }
	})
	if w := do(h, "GET", "/readyz", "", "", ""); w.Code != 503 {
		t.Errorf("readyz shutting down with the store down: %d, want 503", w.Code)
	}
	h, _ = newAdminWith(t, withToken, func(o *admin.Options) { o.Store = func(context.Context) error { return nil } })
	if w := do(h, "GET", "/readyz", "", "", ""); w.Code != 200 || w.Body.String() != "ready\n" {
		t.Errorf("readyz with the store up: %d %q", w.Code, w.Body.String())
	}
}

func TestReadyz(t *testing.T) {
	h, _ := newAdmin(t, withToken, func(context.Context) error { return errors.New("shutting down") })
	w := do(h, "GET", "/readyz", "", "", "")
	if body, _ := io.ReadAll(w.Body); w.Code != 503 || !strings.Contains(string(body), "shutting down") {
		t.Errorf("readyz: %d %s", w.Code, body)
	}
}

// TestReadyzWithUpstreamToken: a gateway that has not had its own token
// for an upstream since start is not ready, and says why; once it has
// had one, losing it is shown but leaves it ready, beside the store's
// note. The token endpoint is real, on loopback; the clock is the test's.
func TestReadyzWithUpstreamToken(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if refuse.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		io.WriteString(w, `{"access_token":"gw","token_type":"Bearer","expires_in":3600}`)
	}))
	defer endpoint.Close()
	yaml := `
store: {url: memory}
upstreams:
  api:
    url: "http://127.0.0.1:8081"
    auth: {type: client_credentials, token_url: "` + endpoint.URL + `/token/", client_id: gw, client_secret: "${SECRET}"}
`
	const secret = "a-client-secret-0123456789"
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(k string) (string, bool) { return secret, k == "SECRET" })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	m := telemetry.NewMetrics("test")
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
		Store: gateway.NewMemoryStore(0, nil, m), Metrics: m, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now },
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	h := admin.Handler(admin.Options{Gatherer: m.Registry, Server: srv,
		Store: func(context.Context) error { return errors.New("connection refused") }})
	const noToken = "upstream api: no token: 1 failed fetch, the last: the token endpoint answered 401 invalid_client"
	steps := []struct {
		advance time.Duration
		refuse  bool
		code    int
		body    string
	}{
		{0, true, 503, "not ready: " + noToken + "; next attempt in 1s\n"},
		{time.Second, false, 200, "ready; store: not answering (the dashboard says why)\n"},
		{time.Hour, true, 200, "ready; " + noToken + "; next attempt in 1s; store: not answering (the dashboard says why)\n"},
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		refuse.Store(st.refuse)
		w := do(h, "GET", "/readyz", "", "", "")
		if w.Code != st.code || w.Body.String() != st.body {
			t.Errorf("step %d: /readyz = %d %q, want %d %q", i+1, w.Code, w.Body.String(), st.code, st.body)
		}
		if strings.Contains(w.Body.String(), secret) || strings.Contains(w.Body.String(), "127.0.0.1") {
			t.Errorf("step %d: /readyz names the secret or an address: %q", i+1, w.Body.String())
		}
	}
}

// TestReadyzStoreNoteNotSpentOnToken: a token endpoint that does not
// answer holds /readyz's token check to the end of its time, but the
// store check has its own: a store that answers is not reported as not
// answering because the token check took the time.
func TestReadyzStoreNoteNotSpentOnToken(t *testing.T) {
	var hang atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	var enterOnce sync.Once
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			enterOnce.Do(func() { close(entered) })
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"gw","token_type":"Bearer","expires_in":3600}`)
	}))
	defer endpoint.Close()
	defer close(release)
	yaml := `
store: {url: memory}
upstreams:
  api:
    url: "http://127.0.0.1:8081"
    auth: {type: client_credentials, token_url: "` + endpoint.URL + `/token/", client_id: gw, client_secret: "${SECRET}"}
`
	f, err := config.Parse("t.yaml", []byte(yaml), "", func(k string) (string, bool) { return "a-client-secret-0123456789", k == "SECRET" })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	var mu sync.Mutex
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m := telemetry.NewMetrics("test")
	srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
		Store: gateway.NewMemoryStore(0, nil, m), Metrics: m, Logger: slog.New(slog.DiscardHandler), Now: clock,
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	storeChecked := make(chan struct{}, 1)
	h := admin.Handler(admin.Options{Gatherer: m.Registry, Server: srv,
		Store: func(ctx context.Context) error {
			if hang.Load() {
				<-entered // the token check is at the endpoint, held
			}
			err := ctx.Err() // a store that answers at once while it has time
			storeChecked <- struct{}{}
			return err
		}})
	if w := do(h, "GET", "/readyz", "", "", ""); w.Code != 200 || w.Body.String() != "ready\n" {
		t.Fatalf("with a token: /readyz = %d %q, want 200 ready", w.Code, w.Body.String())
	}
	<-storeChecked

	// The token expires; its replacement's fetch hangs.
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	hang.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, "GET", "/readyz", nil)
	r.Host = adminHost
	w := httptest.NewRecorder()
	served := make(chan struct{})
	go func() { h.ServeHTTP(w, r); close(served) }()
	<-storeChecked
	cancel() // the probe gives up once the store has answered
	<-served
	if want := "ready; upstream api: no token yet: a fetch is under way\n"; w.Code != 200 || w.Body.String() != want {
		t.Errorf("token endpoint silent, store answering: /readyz = %d %q, want 200 %q", w.Code, w.Body.String(), want)
	}
}
