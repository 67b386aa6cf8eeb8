package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/testnet"
)

// TestDemo drives `floodgate demo` as a person would: the page, a search
// through the gateway to the sample API, then searches until the 429.
func TestDemo(t *testing.T) {
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testnet.Buffer
	env := environ{lookup: func(string) (string, bool) { return "", false }, stdout: &stdout, stderr: &stderr}
	done := make(chan int, 1)
	go func() { done <- run1(ctx, env, []string{"demo", "--listen", pub, "--admin-listen", adm}) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("demo exit code %d; stderr:\n%s", code, stderr.String())
		}
	})
	waitFor(t, "http://"+adm+"/healthz")
	if !strings.Contains(stdout.String(), "http://"+pub+"/") {
		t.Errorf("the demo does not print the URL to open:\n%s", stdout.String())
	}

	// The browser: a cookie jar that sends Secure cookies over http to
	// loopback, as browsers do for 127.0.0.1.
	jar, _ := cookiejar.New(nil)
	get := func(path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+pub+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		for _, c := range jar.Cookies(req.URL) {
			req.AddCookie(c)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		jar.SetCookies(req.URL, resp.Cookies())
		return resp, string(body)
	}

	resp, page := get("/", "Accept", "text/html")
	if resp.StatusCode != 200 || !strings.Contains(page, `role="search"`) || !strings.Contains(page, "/api/search/") {
		t.Fatalf("the page: %d\n%.500s", resp.StatusCode, page)
	}
	if !strings.Contains(resp.Header.Get("Set-Cookie")+strings.Join(resp.Header.Values("Set-Cookie"), ";"), "ovSession=") {
		t.Errorf("the first page load set no session: %q", resp.Header.Values("Set-Cookie"))
	}
	resp, body := get("/api/search/image/?q=cat&page_size=20")
	var result struct {
		ResultCount int `json:"result_count"`
		Results     []struct {
			Title string `json:"title"`
		} `json:"results"`
		Received struct {
			Path       string `json:"path"`
			Authorized bool   `json:"authorized"`
			CookieSent bool   `json:"cookie_sent"`
		} `json:"_received"`
	}
	if err := json.Unmarshal([]byte(body), &result); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search: %d %v\n%s", resp.StatusCode, err, body)
	}
	if result.ResultCount == 0 || result.Received.Path != "/v1/images/" || !result.Received.Authorized || result.Received.CookieSent {
		t.Errorf("search: %+v; want results, /v1/images/, the gateway's token and no cookie", result)
	}
	// Searches until the limit: the demo's 10/1m for each visitor session.
	searches := 1
	for ; searches < 50; searches++ {
		resp, body = get("/api/search/audio/?q=rain&page_size=20")
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if resp.StatusCode != 200 {
			t.Fatalf("search %d: %d %s", searches+1, resp.StatusCode, body)
		}
	}
	if resp.StatusCode != http.StatusTooManyRequests || searches != 10 {
		t.Fatalf("after %d searches: %d, want the 429 on the 11th", searches, resp.StatusCode)
	}
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(resp.Header.Get("Content-Type"), "application/problem+json") ||
		!strings.Contains(body, "faster than a person") {
		t.Errorf("the 429: %q %s", resp.Header, body)
	}
}

// TestOpenverseProductionRefusesWithoutCredentials: `floodgate serve
// --env production` without the API client credentials exits non-zero
// and names API_CLIENT_ID; development runs without them.
func TestOpenverseProductionRefusesWithoutCredentials(t *testing.T) {
	vars := map[string]string{"FLOODGATE_ADMIN_TOKEN": "admin-token-0123456789", "HMAC_SIGNING_SECRET": strings.Repeat("s", 40)}
	code, _, stderr := run(t, vars, "serve", "--config", "../../examples/openverse.yaml", "--env", "production",
		"--listen", testnet.FreeAddr(t), "--admin-listen", "off", "--internal-listen", "off")
	if code == 0 || !strings.Contains(stderr, "API_CLIENT_ID") {
		t.Errorf("production without credentials: exit %d, stderr %q; want non-zero naming API_CLIENT_ID", code, stderr)
	}
	code, _, stderr = run(t, nil, "validate", "--config", "../../examples/openverse.yaml", "--env", "development")
	if code != 0 {
		t.Errorf("development without credentials: exit %d: %s", code, stderr)
	}
}

// TestExplainOpenverse: explain applies the request's identities: a
// made-up session cookie is no session (per-session does not match), and
// an API route counts as the frontend's client, under its plan only.
func TestExplainOpenverse(t *testing.T) {
	code, out, stderr := run(t, nil, "explain", "--config", "../../examples/openverse.yaml", "--env", "development",
		"GET", "/api/search/image/?q=cat", "-H", "Cookie: ovSession=made-up")
	if code != 0 {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"per-session                  block  no match",
		"api-without-session          block  allowed",
		"api-client-plan.frontend     block  allowed",
		"api-client-plan.standard     block  no match",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}
