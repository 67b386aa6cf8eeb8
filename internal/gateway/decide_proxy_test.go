package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/testnet"
)

// The addresses docs/decide.md's snippets are written with; the tests put
// their own in their place.
const (
	docProxy    = "127.0.0.1:8080"
	docUpstream = "127.0.0.1:8081"
	docDecide   = "127.0.0.1:8083"
)

// docSnippet returns the first fenced block of language lang in
// docs/decide.md, with the documented addresses replaced by the test's.
// A snippet that no longer names one of them fails the test: the page
// and the test must stay the same text.
func docSnippet(t *testing.T, lang, proxy, upstream, decide string) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/decide.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```" + regexp.QuoteMeta(lang) + "\n(.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatalf("docs/decide.md has no ```%s block", lang)
	}
	s := string(m[1])
	for _, a := range [][2]string{{docProxy, proxy}, {docUpstream, upstream}, {docDecide, decide}} {
		if !strings.Contains(s, a[0]) {
			t.Fatalf("the %s snippet of docs/decide.md no longer names %s", lang, a[0])
		}
		s = strings.ReplaceAll(s, a[0], a[1])
	}
	return s
}

// startProcess runs a proxy binary until the test ends and waits, with a
// bounded number of attempts, for addr to accept connections.
func startProcess(t *testing.T, addr string, log *testnet.Buffer, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	for range 600 {
		select {
		case <-exited:
			t.Fatalf("%s exited:\n%s", name, log.String())
		default:
		}
		c, err := net.DialTimeout("tcp", addr, waitStep)
		if err == nil {
			c.Close()
			return
		}
		waitABit()
	}
	t.Fatalf("%s does not accept connections on %s:\n%s", name, addr, log.String())
}

// waitStep is how long startProcess waits between attempts to connect.
const waitStep = 50 * time.Millisecond

func waitABit() { time.Sleep(waitStep) }

// proxyGet sends one request through the real proxy at addr, as a client
// with the header fields hdr, and returns the response and its body.
func proxyGet(t *testing.T, c *http.Client, addr, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// mavedbBehindProxy runs examples/mavedb.yaml's acceptance scenario
// through a real proxy at addr: 1,500 requests of one client pass, the
// 1,501st gets 429 with Retry-After: 300, the RateLimit fields and CORS
// fields; GPTBot gets 403 on a CSV endpoint; the upstream sees none of the
// refused requests; the decision metrics count every one. check examines
// the 429 further.
func mavedbBehindProxy(t *testing.T, h *decideHarness, addr string, check func(resp *http.Response, body string)) {
	t.Helper()
	h.up.mu.Lock()
	clear(h.up.byXFF)
	h.up.mu.Unlock()
	t.Helper()
	c := clientFrom(t, "127.0.0.1")
	for i := range 1500 {
		resp, body := proxyGet(t, c, addr, "/api/v1/score-sets/?page=1")
		if resp.StatusCode != 200 || body != `{"ok":true}` {
			t.Fatalf("request %d = %d %q, want the upstream's 200", i+1, resp.StatusCode, body)
		}
		if i == 0 && !strings.HasPrefix(resp.Header.Get("RateLimit"), `"rate-limit-ip";r=1499;`) {
			t.Errorf("first response's RateLimit = %q, want 1499 remaining", resp.Header.Get("RateLimit"))
		}
	}
	resp, body := proxyGet(t, c, addr, "/api/v1/score-sets/?page=1", "Origin", "https://mavedb.org", "Accept", "application/json")
	if resp.StatusCode != 429 {
		t.Fatalf("request 1,501 = %d %s, want 429", resp.StatusCode, body)
	}
	for name, want := range map[string]string{"Retry-After": "300", "Access-Control-Allow-Origin": "*", "RateLimit-Policy": `"rate-limit-ip";q=1500;w=300`} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("429 %s = %q, want %q", name, got, want)
		}
	}
	if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"rate-limit-ip";r=0;`) {
		t.Errorf("429 RateLimit = %q, want 0 remaining", got)
	}
	if !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("429 Access-Control-Expose-Headers = %q, want Retry-After in it", resp.Header.Get("Access-Control-Expose-Headers"))
	}
	check(resp, body)

	resp, body = proxyGet(t, clientFrom(t, "127.0.0.3"), addr, "/api/v1/score-sets/urn:mavedb:00000001-a-1/scores",
		"User-Agent", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)")
	if resp.StatusCode != 403 {
		t.Errorf("GPTBot on a CSV endpoint = %d %s, want 403", resp.StatusCode, body)
	}
	if got := h.up.count("127.0.0.1"); got != 1500 {
		t.Errorf("upstream saw %d requests of the client, want 1500 (none refused)", got)
	}
	if got := h.up.count("127.0.0.3"); got != 0 {
		t.Errorf("upstream saw %d of GPTBot's requests, want 0", got)
	}
	h.up.mu.Lock()
	if n := h.up.floodgateFields; n != 0 {
		t.Errorf("%d requests reached the upstream with X-Floodgate-… fields", n)
	}
	h.up.mu.Unlock()
	for name, want := range map[string]float64{
		`floodgate_rule_decisions_total{decision="allowed",listener="decide",rule="rate-limit-ip"}`:           1500,
		`floodgate_rule_decisions_total{decision="blocked",listener="decide",rule="rate-limit-ip"}`:           1,
		`floodgate_rule_decisions_total{decision="denied",listener="decide",rule="block-ai-crawlers-on-csv"}`: 1,
		`floodgate_rule_decisions_total{decision="allowed",listener="decide",rule="shadow-requests"}`:         301,
		`floodgate_rule_decisions_total{decision="would_block",listener="decide",rule="shadow-requests"}`:     1201,
		`floodgate_requests_total{code="200",listener="decide",route="api"}`:                                  1500,
		`floodgate_requests_total{code="429",listener="decide",route="api"}`:                                  1,
		`floodgate_requests_total{code="403",listener="decide",route="csv-scores"}`:                           1,
		`floodgate_requests_total{code="200",listener="gateway",route="api"}`:                                 0,
	} {
		if got := h.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// startNginx runs a real nginx with server (http-level directives, the
// page's snippet) until the test ends, connecting to floodgate from
// proxyAddr, the harness's trusted proxy, and waits until addr accepts
// connections. It returns the directory of nginx's files.
func startNginx(t *testing.T, addr, server string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (Debian: apt-get install nginx-light; scripts/test installs it): the decision listener is not tested behind a real nginx")
	}
	prefix := t.TempDir()
	// The process settings around the page's snippet: one process in the
	// foreground, files under the test's directory, and connections to
	// floodgate from 127.0.0.2, the harness's trusted proxy.
	conf := `daemon off;
master_process off;
pid ` + prefix + `/nginx.pid;
error_log ` + prefix + `/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path ` + prefix + `/body;
    proxy_temp_path ` + prefix + `/proxy;
    fastcgi_temp_path ` + prefix + `/fastcgi;
    uwsgi_temp_path ` + prefix + `/uwsgi;
    scgi_temp_path ` + prefix + `/scgi;
    proxy_bind ` + proxyAddr + `;
` + server + `
}
`
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, addr, &testnet.Buffer{}, nil, bin, "-p", prefix, "-c", path)
	return prefix
}

// rawHead sends the bytes of one request head to addr from the loopback
// address ip and returns the response, for requests net/http does not
// write (HTTP/1.0 without Host).
func rawHead(t *testing.T, ip, addr, head string) (*http.Response, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestDecideBehindRealNginx runs docs/decide.md's nginx configuration,
// in a real nginx, in front of a recording upstream, asking floodgate
// with examples/mavedb.yaml.
func TestDecideBehindRealNginx(t *testing.T) {
	h := newDecideHarness(t, config.DecideNginx, nil)
	addr := testnet.FreeAddr(t)
	prefix := startNginx(t, addr, docSnippet(t, "nginx", addr, h.up.Listener.Addr().String(), h.dec.Listener.Addr().String()))
	mavedbBehindProxy(t, h, addr, func(resp *http.Response, body string) {
		if !strings.Contains(body, `"status":429`) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("429 body %q (%s), want nginx's problem+json", body, resp.Header.Get("Content-Type"))
		}
	})
	// A request without Host (HTTP/1.0, as health checkers send) is
	// decided and forwarded like any other.
	resp, body := rawHead(t, "127.0.0.4", addr, "GET /api/v1/score-sets/ HTTP/1.0\r\n\r\n")
	if resp.StatusCode != 200 || body != `{"ok":true}` {
		t.Errorf("HTTP/1.0 without Host = %d %q, want the upstream's 200", resp.StatusCode, body)
	}
	// nginx serves a target with a fragment as the part before it, and
	// asks with its $request_uri, fragment and all: decided, not a 500.
	resp, body = rawHead(t, "127.0.0.4", addr, "GET /api/v1/score-sets/?page=1#/../x HTTP/1.0\r\n\r\n")
	if resp.StatusCode != 200 || body != `{"ok":true}` {
		t.Errorf("a target with a fragment = %d %q, want the upstream's 200", resp.StatusCode, body)
	}
	if errs, _ := os.ReadFile(filepath.Join(prefix, "error.log")); strings.Contains(string(errs), "[error]") {
		t.Errorf("nginx logged errors:\n%s", errs)
	}
}

// TestDecideNginxRelaysRefusals: through the page's nginx snippet, a
// client gets the status floodgate decided, as from the gateway: 404
// with no route, 400 for a query value over a route's cap.
func TestDecideNginxRelaysRefusals(t *testing.T) {
	h := newDecideHarness(t, config.DecideNginx, func(c *config.Config) {
		for i := range c.Routes {
			c.Routes[i].Methods = []string{"GET", "HEAD", "OPTIONS"}
		}
		c.Routes[len(c.Routes)-1].Query.Max = map[string]int64{"page_size": 20} // the catch-all "api"
	})
	addr := testnet.FreeAddr(t)
	startNginx(t, addr, docSnippet(t, "nginx", addr, h.up.Listener.Addr().String(), h.dec.Listener.Addr().String()))
	c := clientFrom(t, "127.0.0.6")
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/api/v1/score-sets/?page_size=20", 200},
		{"GET", "/api/v1/score-sets/?page_size=500", 400},
		{"DELETE", "/api/v1/score-sets/", 404},
		{"GET", "/api/v1/score-sets/", 200},
	} {
		req, err := http.NewRequest(tt.method, "http://"+addr+tt.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
		}
	}
	if got := h.up.count("127.0.0.6"); got != 2 {
		t.Errorf("the upstream saw %d requests, want the 2 allowed", got)
	}
}

// TestDecideNginxCORSFromConfig: through the page's nginx snippet, a
// refusal carries the CORS fields responses.cors configures, as the
// gateway's own answer does, and none when it configures none.
func TestDecideNginxCORSFromConfig(t *testing.T) {
	for _, tt := range []struct {
		origin, expose string
		edit           func(*config.Config)
	}{
		{"https://app.example.org", "Retry-After", func(c *config.Config) {
			c.Responses.CORS.AllowOrigin = "https://app.example.org"
			c.Responses.CORS.ExposeHeaders = []string{"Retry-After"}
		}},
		{"", "", func(c *config.Config) { c.Responses.CORS = config.CORS{} }},
	} {
		h := newDecideHarness(t, config.DecideNginx, tt.edit)
		addr := testnet.FreeAddr(t)
		startNginx(t, addr, docSnippet(t, "nginx", addr, h.up.Listener.Addr().String(), h.dec.Listener.Addr().String()))
		resp, body := proxyGet(t, clientFrom(t, "127.0.0.3"), addr, "/api/v1/score-sets/urn:mavedb:00000001-a-1/scores",
			"Origin", "https://app.example.org", "User-Agent", "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)")
		if resp.StatusCode != 403 {
			t.Fatalf("GPTBot on a CSV endpoint = %d %s, want 403", resp.StatusCode, body)
		}
		for name, want := range map[string]string{"Access-Control-Allow-Origin": tt.origin, "Access-Control-Expose-Headers": tt.expose} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("allow_origin %q: 403 %s = %q, want %q", tt.origin, name, got, want)
			}
		}
	}
}

// TestDecideNginxFloodgateUnreachable runs the page's nginx snippet
// asking an address where nothing listens: as written it fails closed
// (500, the upstream never asked); with the two lines the page says to
// uncomment, it fails open (the upstream's answer).
func TestDecideNginxFloodgateUnreachable(t *testing.T) {
	up := newUpstream(t)
	nobody := testnet.FreeAddr(t) // nothing listens there
	failClosed := docSnippet(t, "nginx", docProxy, up.Listener.Addr().String(), nobody)
	failOpen := failClosed
	for _, line := range []string{
		"# error_page 500 502 503 504 = @floodgate_unavailable;",
		"# location @floodgate_unavailable { return 204; }",
	} {
		if !strings.Contains(failOpen, line) {
			t.Fatalf("the nginx snippet of docs/decide.md no longer has the line %q", line)
		}
		failOpen = strings.Replace(failOpen, line, strings.TrimPrefix(line, "# "), 1)
	}
	for _, tt := range []struct {
		name, server string
		wantStatus   int
		wantBody     string
		wantUpstream int
	}{
		{"fail closed", failClosed, 500, "", 0},
		{"fail open", failOpen, 200, `{"ok":true}`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := testnet.FreeAddr(t)
			startNginx(t, addr, strings.ReplaceAll(tt.server, docProxy, addr))
			before := up.count("127.0.0.5")
			resp, body := proxyGet(t, clientFrom(t, "127.0.0.5"), addr, "/api/v1/score-sets/")
			if resp.StatusCode != tt.wantStatus || tt.wantBody != "" && body != tt.wantBody {
				t.Errorf("floodgate unreachable: %d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			if got := up.count("127.0.0.5") - before; got != tt.wantUpstream {
				t.Errorf("the upstream saw %d requests, want %d", got, tt.wantUpstream)
			}
		})
	}
}

// caddyVersion is the Caddy that scripts/test builds, from the Go module
// proxy, for TestDecideBehindRealCaddy.
const caddyVersion = "v2.11.9"

// caddyBinary returns the path of that Caddy: $FLOODGATE_CADDY, else where
// scripts/test puts it; "" when neither is there.
func caddyBinary() string {
	p := os.Getenv("FLOODGATE_CADDY")
	if p == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		p = filepath.Join(dir, "floodgate-caddy", caddyVersion, "caddy")
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestDecideBehindRealCaddy runs docs/decide.md's Caddyfile, in a real
// Caddy (forward_auth), in front of a recording upstream, asking floodgate
// with examples/mavedb.yaml: the nginx test's scenario, the client
// receiving floodgate's own problem+json 429.
func TestDecideBehindRealCaddy(t *testing.T) {
	bin := caddyBinary()
	if bin == "" {
		t.Skip("no Caddy " + caddyVersion + " (scripts/test builds it: GOBIN=~/.cache/floodgate-caddy/" + caddyVersion +
			" go install github.com/caddyserver/caddy/v2/cmd/caddy@" + caddyVersion + "; or set FLOODGATE_CADDY): the decision listener is not tested behind a real Caddy")
	}
	// `caddy version` says "unknown" for a build by go install; the
	// module version is in the build information.
	out, err := exec.Command(bin, "build-info").Output()
	if err != nil || !strings.Contains(string(out), "mod\tgithub.com/caddyserver/caddy/v2\t"+caddyVersion+"\t") {
		t.Fatalf("%s build-info: %v, and no caddy %s in:\n%.300s", bin, err, caddyVersion, out)
	}
	// Caddy asks from 127.0.0.1, the clients' address too: trusted, it is
	// passed over in X-Forwarded-For's walk, which then ends on it.
	h := newDecideHarness(t, config.DecideForwarded, func(c *config.Config) {
		c.ClientIP.TrustedProxies = config.StringList{"127.0.0.1"}
	})
	addr := testnet.FreeAddr(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "Caddyfile")
	conf := docSnippet(t, "caddyfile", addr, h.up.Listener.Addr().String(), h.dec.Listener.Addr().String())
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &testnet.Buffer{}
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
	startProcess(t, addr, log, env, bin, "run", "--config", path, "--adapter", "caddyfile")
	mavedbBehindProxy(t, h, addr, func(resp *http.Response, body string) {
		var p struct {
			Type   string `json:"type"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil || p.Status != 429 || !strings.Contains(p.Type, "quota-exceeded") ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("429 body %q (%s), want floodgate's problem+json", body, resp.Header.Get("Content-Type"))
		}
	})
	h.up.mu.Lock()
	defer h.up.mu.Unlock()
	for path := range h.up.byPath {
		if path == "/decide" {
			t.Errorf("the upstream was asked for /decide")
		}
	}
}

// TestDecideCaddyFloodgateUnresponsive runs docs/decide.md's Caddyfile
// asking an address where nothing listens, and one that accepts
// connections and never answers: Caddy answers 502 and 504, and the
// upstream is asked neither time. Without a response header timeout,
// Caddy would wait for the second without end.
func TestDecideCaddyFloodgateUnresponsive(t *testing.T) {
	bin := caddyBinary()
	if bin == "" {
		t.Skip("no Caddy " + caddyVersion + " (see TestDecideBehindRealCaddy)")
	}
	up := newUpstream(t)
	silent := testnet.Serve(t, func(c net.Conn) { io.Copy(io.Discard, c) }) // reads, never answers
	for _, tt := range []struct {
		name, decide string
		wantStatus   int
	}{
		{"unreachable", testnet.FreeAddr(t), 502},
		{"no answer", silent, 504},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := testnet.FreeAddr(t)
			dir := t.TempDir()
			path := filepath.Join(dir, "Caddyfile")
			conf := docSnippet(t, "caddyfile", addr, up.Listener.Addr().String(), tt.decide)
			if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + dir, "XDG_CONFIG_HOME=" + dir}
			startProcess(t, addr, &testnet.Buffer{}, env, bin, "run", "--config", path, "--adapter", "caddyfile")
			c := clientFrom(t, "127.0.0.5")
			c.Timeout = time.Minute // a bound on the test, not an assertion
			resp, _ := proxyGet(t, c, addr, "/api/v1/score-sets/")
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("floodgate %s: %d, want %d", tt.name, resp.StatusCode, tt.wantStatus)
			}
			if got := up.count("127.0.0.5"); got != 0 {
				t.Errorf("the upstream saw %d requests, want none", got)
			}
		})
	}
}

// replay sends raw, as one HTTP/1.1 request from the trusted proxy's
// address, to the decision listener and returns the answer and its body.
func (h *decideHarness) replay(raw string) (*http.Response, string) {
	h.t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(proxyAddr)}}
	c, err := d.Dial("tcp", h.dec.Listener.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, strings.ReplaceAll(raw, "\n", "\r\n")); err != nil {
		h.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("reading the answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestDecideTraefikForwardAuthShape replays the request Traefik's
// ForwardAuth middleware sends, as its documentation gives it: a GET to
// the configured address with the client's header fields and
// X-Forwarded-Method, -Proto, -Host, -Uri and -For. Traefik relays a
// non-2xx answer as it is, so the client gets floodgate's 429.
func TestDecideTraefikForwardAuthShape(t *testing.T) {
	h := newDecideHarness(t, config.DecideForwarded, func(c *config.Config) {
		c.Rules[2].Limits = []string{"2/5m"}
	})
	req := `GET /decide HTTP/1.1
Host: ` + h.dec.Listener.Addr().String() + `
User-Agent: curl/8.5.0
Accept: application/json
Accept-Language: es
X-Forwarded-For: 192.0.2.60
X-Forwarded-Host: api.mavedb.org
X-Forwarded-Method: GET
X-Forwarded-Proto: https
X-Forwarded-Uri: /api/v1/score-sets/?q=brca1
Connection: close

`
	for i := range 2 {
		if resp, body := h.replay(req); resp.StatusCode != 200 || body != "" {
			t.Fatalf("decision %d = %d %q, want an empty 200", i+1, resp.StatusCode, body)
		}
	}
	resp, body := h.replay(req)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "300" || resp.Header.Get("Content-Language") != "es" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("third decision = %d, Retry-After %q, %s in %q; want 429, 300, problem+json in es:\n%s",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), resp.Header.Get("Content-Language"), body)
	}
	// The CSV endpoint by its host-independent path, GPTBot denied.
	deny := strings.Replace(strings.Replace(req, "curl/8.5.0", "GPTBot/1.2", 1), "/api/v1/score-sets/?q=brca1", "/api/v1/score-sets/urn:mavedb:1/mapped-variants", 1)
	if resp, _ := h.replay(strings.Replace(deny, "192.0.2.60", "192.0.2.61", 1)); resp.StatusCode != 403 {
		t.Errorf("GPTBot on a CSV endpoint = %d, want 403", resp.StatusCode)
	}
}

// TestDecideEnvoyExtAuthzShape replays the check request of Envoy's
// ext_authz filter with an HTTP service (path_prefix: /decide), as its
// documentation gives it: the original method, path_prefix followed by
// the original path and query, the original Host, Content-Length: 0, and
// the header fields allowed_headers lets through (here x-forwarded-for,
// x-forwarded-proto, user-agent, accept).
func TestDecideEnvoyExtAuthzShape(t *testing.T) {
	h := newDecideHarness(t, config.DecideEnvoy, func(c *config.Config) {
		c.Rules[2].Limits = []string{"2/5m"}
	})
	req := `POST /decide/api/v1/score-sets/search?limit=10 HTTP/1.1
host: api.mavedb.org
content-length: 0
user-agent: python-requests/2.32.3
accept: application/problem+json
x-forwarded-for: 198.51.100.70
x-forwarded-proto: https
x-envoy-expected-rq-timeout-ms: 200
connection: close

`
	for i := range 2 {
		resp, body := h.replay(req)
		if resp.StatusCode != 200 || body != "" || resp.Header.Get("RateLimit") == "" {
			t.Fatalf("check %d = %d %q RateLimit %q, want an empty 200 with RateLimit", i+1, resp.StatusCode, body, resp.Header.Get("RateLimit"))
		}
	}
	resp, body := h.replay(req)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "300" || !strings.Contains(body, `"status":429`) {
		t.Errorf("third check = %d, Retry-After %q, body %q; want 429, 300, problem+json", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if got := h.metric(`floodgate_rule_decisions_total{decision="blocked",listener="decide",rule="rate-limit-ip"}`); got != 1 {
		t.Errorf("blocked decisions = %v, want 1", got)
	}
	if resp, _ := h.replay(strings.Replace(req, "/decide/api", "/decideapi", 1)); resp.StatusCode != 404 {
		t.Errorf("a path not under /decide/ = %d, want 404", resp.StatusCode)
	}
}
