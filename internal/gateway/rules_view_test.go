package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestRulesSeeTheMethodUpperCase: a rule on POST refuses "post" and
// "pOsT" too, on both engines: the method is case-sensitive on the wire,
// but upstreams commonly fold it, and a refusal must not depend on the
// client's spelling.
func TestRulesSeeTheMethodUpperCase(t *testing.T) {
	yaml := `
upstreams: {api: {url: "${UP}"}}
rules:
  - {name: deny-post, action: deny, when: "request.method == 'POST'"}
`
	for _, engine := range engines {
		for _, method := range []string{"POST", "post", "pOsT"} {
			t.Run(engine+"/"+method, func(t *testing.T) {
				up := newCountingUpstream(t)
				gw := startEngine(t, engine, yaml, up.url)
				resp, body, err := exchangeRaw(t, gw.addr, method+" /x HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\n\r\n")
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s /x: %d %s, want 403 by deny-post", method, resp.StatusCode, body)
				}
				if arrived, _, _ := up.counts(); arrived != 0 {
					t.Errorf("%s /x reached the upstream", method)
				}
			})
		}
	}
}

// TestCountWhenCountsUpstreamAnswersOnly: a count_when rule counts the
// upstream's answers, never floodgate's own refusals by a later rule
// (docs/rules.md: requests floodgate answers itself cost nothing).
func TestCountWhenCountsUpstreamAnswersOnly(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("status"); s != "" {
			n, _ := strconv.Atoi(s)
			w.WriteHeader(n)
		}
	}))
	defer up.Close()
	gw := startEngine(t, engines[0], `
client_ip: {trusted_proxies: [127.0.0.0/8]}
upstreams: {api: {url: "${UP}"}}
rules:
  - name: failed-logins
    when: "request.path == '/login'"
    count_when: "response.status == 401 || response.status == 403"
    limits: [2/10m]
    ban: 1h
  - {name: deny-flagged, action: deny, when: "'x-deny' in request.headers"}
`, up.URL)
	get := func(query, extra string) int {
		t.Helper()
		resp, _, err := exchangeRaw(t, gw.addr, "GET /login?"+query+" HTTP/1.1\r\nHost: gw\r\n"+extra+"\r\n")
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode
	}
	for i := range 3 {
		if code := get("status=200", "X-Deny: 1\r\n"); code != http.StatusForbidden {
			t.Fatalf("flagged request %d: %d, want 403 by deny-flagged", i+1, code)
		}
	}
	if code := get("status=200", ""); code != http.StatusOK {
		t.Errorf("a login after three of floodgate's own 403s: %d, want 200 (they are not failed logins)", code)
	}
	// The upstream's 401s do count: two, then the ban.
	get("status=401", "")
	get("status=401", "")
	if code := get("status=200", ""); code != http.StatusTooManyRequests {
		t.Errorf("after two failed logins: %d, want 429", code)
	}
}
