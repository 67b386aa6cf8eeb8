package admin_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// stepClock is a clock the test steps.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// actionLines returns the lines logged since the last call, without their
// time, and the whole log.
func actionLines(t *testing.T, buf *testnet.Buffer, seen *int) ([]map[string]any, string) {
	t.Helper()
	all := buf.String()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(all[*seen:]), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		delete(m, "time")
		out = append(out, m)
	}
	*seen = len(all)
	return out, all
}

// TestAdminActionsLogged: every admitted admin request is an "admin action" line
// with what, the outcome and the peer's class; every refused one an
// "admin request refused" line, rate-limited with a count; no line holds
// the token, a guess at it, or an address.
func TestAdminActionsLogged(t *testing.T) {
	buf := new(testnet.Buffer)
	clock := &stepClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	h, _ := newAdminWith(t, withToken, func(o *admin.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(buf, nil))
		o.Refusals = telemetry.LogLimiterOptions{Interval: 10 * time.Second, Now: clock.Now, AfterFunc: func(time.Duration, func()) {}}
	})
	const guess = "Bearer not-the-token-guess"
	seen := 0
	step := func(name string, want []map[string]any) {
		t.Helper()
		got, all := actionLines(t, buf, &seen)
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("%s: lines (-got +want):\n%s\nlog:\n%s", name, diff, all)
		}
	}
	action := func(what, outcome string, status int, peer string, more ...any) map[string]any {
		m := map[string]any{"level": "INFO", "msg": "admin action", "action": what, "outcome": outcome, "status": float64(status), "peer": peer}
		for i := 0; i < len(more); i += 2 {
			m[more[i].(string)] = more[i+1]
		}
		return m
	}
	refused := func(what, reason string, status int, peer string, count float64) map[string]any {
		return map[string]any{"level": "WARN", "msg": "admin request refused", "action": what, "reason": reason,
			"status": float64(status), "peer": peer, "count": count, "interval": "10s"}
	}

	do(h, "PUT", "/admin/mode", "Bearer "+token, "log-only", "127.0.0.1:5000")
	step("mode switched", []map[string]any{action("set mode", "ok", 200, "loopback", "from", "enforce", "to", "log-only")})

	do(h, "PUT", "/admin/mode", "bearer "+token, `{"mode": "sideways"}`, "[::1]:5000")
	step("bad mode", []map[string]any{action("set mode", "rejected", 400, "loopback")})

	do(h, "GET", "/admin/config", "Bearer "+token, "", "192.0.2.10:5000")
	do(h, "POST", "/admin/explain", "Bearer "+token, `{"path": "/x"}`, "192.0.2.10:5000")
	do(h, "GET", "/admin/", "Bearer "+token, "", "192.0.2.10:5000")
	step("reads", []map[string]any{
		action("read config", "ok", 200, "remote"),
		action("explain", "ok", 200, "remote"),
		action("dashboard", "ok", 200, "remote"),
	})

	do(h, "PUT", "/admin/mode", "", "enforce", "192.0.2.10:5000")
	do(h, "PUT", "/admin/mode", guess, "enforce", "192.0.2.10:5000")
	step("refused", []map[string]any{
		refused("set mode", "credentials missing", 401, "remote", 1),
		refused("set mode", "credentials wrong", 401, "remote", 1),
	})
	// A scanner's guesses: counted, one line per interval.
	for range 20 {
		do(h, "PUT", "/admin/mode", guess, "enforce", "192.0.2.10:5000")
	}
	step("guesses within the interval", nil)
	clock.Advance(10 * time.Second)
	do(h, "PUT", "/admin/mode", guess, "enforce", "192.0.2.10:5000")
	step("guesses after the interval", []map[string]any{refused("set mode", "credentials wrong", 401, "remote", 21)})

	// The sign-in form: a wrong token is a wrong credential, not a
	// missing one; the attempts after too many are refused and counted
	// like the others; so is a sign-in from another page.
	signIn := func(tok, origin string) int {
		r := httptest.NewRequest("POST", "/admin/signin", strings.NewReader("token="+tok))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		r.RemoteAddr = "192.0.2.10:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	clock.Advance(10 * time.Second)
	codes := map[int]int{}
	for range 12 {
		codes[signIn("not-the-token-guess", "")]++
	}
	codes[signIn("not-the-token-guess", "http://evil.example")]++
	if codes[401] == 0 || codes[429] == 0 || codes[403] != 1 {
		t.Fatalf("sign-in answers %v, want 401s, then 429s, and a 403 from another page", codes)
	}
	step("sign-in refusals", []map[string]any{
		refused("sign in", "credentials wrong", 401, "remote", 1),
		refused("sign in", "throttled", 429, "remote", 1),
		refused("sign in", "cross-origin", 403, "remote", 1),
	})

	all := buf.String()
	for _, secret := range []string{token, "not-the-token-guess", "192.0.2.10", "127.0.0.1", "::1"} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds %q:\n%s", secret, all)
		}
	}

	// Without a token, the API answers loopback peers only: a remote
	// peer's request is refused, and logged so.
	buf2 := new(testnet.Buffer)
	h2, _ := newAdminWith(t, `upstreams: {api: {url: "http://127.0.0.1:8081"}}`, func(o *admin.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(buf2, nil))
	})
	do(h2, "GET", "/admin/mode", "", "", "192.0.2.10:5000")
	do(h2, "GET", "/admin/mode", "", "", "127.0.0.1:5000")
	// A loopback peer addressing another name: a page rebound to 127.0.0.1.
	r := httptest.NewRequest("PUT", "/admin/mode", strings.NewReader("log-only"))
	r.Host, r.RemoteAddr = "rebind.attacker.example:9090", "127.0.0.1:5000"
	h2.ServeHTTP(httptest.NewRecorder(), r)
	seen = 0
	got, all := actionLines(t, buf2, &seen)
	want := []map[string]any{refused("read mode", "forbidden", 403, "remote", 1), action("read mode", "ok", 200, "loopback"),
		refused("set mode", "host not loopback", 403, "loopback", 1)}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("no token: lines (-got +want):\n%s\nlog:\n%s", diff, all)
	}
	if strings.Contains(all, "attacker") {
		t.Errorf("the log holds the Host a client sent:\n%s", all)
	}
}

// TestUnknownAdminRequestsLogged: a request under /admin/ that no
// endpoint takes — another method, a path the API does not have — is
// logged as a refusal, like a wrong token, and answered with no-store.
func TestUnknownAdminRequestsLogged(t *testing.T) {
	buf := new(testnet.Buffer)
	h, _ := newAdminWith(t, withToken, func(o *admin.Options) {
		o.Logger = slog.New(slog.NewJSONHandler(buf, nil))
	})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/admin/mode", 405},
		{"DELETE", "/admin/config", 405},
		{"GET", "/admin/reload", 404},
		{"GET", "/admin//mode", 307}, // to the cleaned path: no refusal
	} {
		w := do(h, tc.method, tc.path, "Bearer "+token, "", "192.0.2.10:5000")
		if w.Code != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, w.Code, tc.status)
		}
		if tc.status != 307 && w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.path, w.Header().Get("Cache-Control"))
		}
	}
	seen := 0
	got, all := actionLines(t, buf, &seen)
	want := []map[string]any{
		{"level": "WARN", "msg": "admin request refused", "action": "none", "reason": "method not allowed", "status": float64(405), "peer": "remote", "count": float64(1), "interval": "10s"},
		{"level": "WARN", "msg": "admin request refused", "action": "none", "reason": "no such endpoint", "status": float64(404), "peer": "remote", "count": float64(1), "interval": "10s"},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("lines (-got +want):\n%s\nlog:\n%s", diff, all)
	}
	if strings.Contains(all, "reload") || strings.Contains(all, token) {
		t.Errorf("the log holds the path or the token:\n%s", all)
	}
}
