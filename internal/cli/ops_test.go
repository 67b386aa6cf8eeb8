package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/testnet"
)

// gatewayProc is `floodgate serve` running in-process on a temp config.
type gatewayProc struct {
	t              *testing.T
	conf, pub, adm string
	cancel         context.CancelFunc
	done           chan int
	stderr         *testnet.Buffer
	env            map[string]string // more of serve's environment
}

func startServe(t *testing.T, yaml string, extra ...string) *gatewayProc {
	t.Helper()
	return startServeEnv(t, nil, yaml, extra...)
}

// startServeEnv is startServe with more variables in serve's environment.
func startServeEnv(t *testing.T, env map[string]string, yaml string, extra ...string) *gatewayProc {
	t.Helper()
	g := &gatewayProc{t: t, env: env}
	g.conf = filepath.Join(t.TempDir(), "floodgate.yaml")
	g.write(yaml)
	g.launch(func() map[string]string { return map[string]string{"PUB": g.pub, "ADM": g.adm} },
		append([]string{"serve", "--config", g.conf}, extra...))
	return g
}

// launch runs args in-process on two free loopback addresses (g.pub,
// g.adm; vars names them to the configuration) until /healthz answers.
// Free ports are found by binding and closing, so another test may take
// one before serve binds it: then serve exits with "address already in
// use", and launch tries again on new ones, three times at most. Any other
// early exit fails the test with serve's log.
func (g *gatewayProc) launch(vars func() map[string]string, args []string) {
	g.t.Helper()
	for attempt := 1; ; attempt++ {
		g.pub, g.adm = testnet.FreeAddr(g.t), testnet.FreeAddr(g.t)
		g.done, g.stderr = make(chan int, 1), &testnet.Buffer{}
		ctx, cancel := context.WithCancel(context.Background())
		g.cancel = cancel
		vs := vars()
		for k, v := range g.env {
			vs[k] = v
		}
		env := environ{lookup: func(k string) (string, bool) { v, ok := vs[k]; return v, ok }, stdout: io.Discard, stderr: g.stderr}
		done := g.done
		go func() { done <- run1(ctx, env, args) }()
		code, up := waitServing(g.adm, done)
		if up {
			g.t.Cleanup(func() {
				cancel()
				<-done
			})
			return
		}
		cancel()
		if code >= 0 && strings.Contains(g.stderr.String(), "address already in use") && attempt < 3 {
			continue
		}
		if code < 0 {
			<-done
		}
		g.t.Fatalf("floodgate %s never answered on %s (exit %d); log:\n%s", args[0], g.adm, code, g.stderr.String())
	}
}

// waitServing polls http://adm/healthz until it answers (true), the
// process ends (its exit code), or 10 s pass (-1).
func waitServing(adm string, done <-chan int) (code int, up bool) {
	for range 500 {
		select {
		case code := <-done:
			return code, false
		default:
		}
		if resp, err := http.Get("http://" + adm + "/healthz"); err == nil {
			resp.Body.Close()
			return 0, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1, false
}

func (g *gatewayProc) write(yaml string) {
	g.t.Helper()
	tmp := g.conf + ".tmp"
	if err := os.WriteFile(tmp, []byte(yaml), 0o600); err != nil {
		g.t.Fatal(err)
	}
	if err := os.Rename(tmp, g.conf); err != nil { // atomic, as editors and deploy tools do
		g.t.Fatal(err)
	}
}

func (g *gatewayProc) metric(series string) float64 {
	g.t.Helper()
	resp, err := http.Get("http://" + g.adm + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return -1
}

// waitMetric polls until series reaches want: reloads are asynchronous.
func (g *gatewayProc) waitMetric(series string, want float64) {
	g.t.Helper()
	for range 500 {
		if g.metric(series) >= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("%s never reached %v (now %v); log:\n%s", series, want, g.metric(series), g.stderr.String())
}

// adminConfig is GET /admin/config's answer (no token: a loopback peer).
func (g *gatewayProc) adminConfig() map[string]any {
	g.t.Helper()
	resp, err := http.Get("http://" + g.adm + "/admin/config")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		g.t.Fatalf("GET /admin/config: %d %v", resp.StatusCode, err)
	}
	return body
}

func (g *gatewayProc) status(path string) int {
	g.t.Helper()
	resp, err := http.Get("http://" + g.pub + path)
	if err != nil {
		g.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func opsYAML(upstream, limit string) string {
	return `
listen: ${PUB}
admin: {listen: "${ADM}"}
server: {read_header_timeout: 300ms}
upstreams: {api: {url: "` + upstream + `"}}
rules:
  - {name: per-ip, limits: [` + limit + `]}
`
}

const reloadOK = `floodgate_config_reloads_total{result="success"}`
const reloadFailed = `floodgate_config_reloads_total{result="failure"}`
const lastReloadOK = `floodgate_config_last_reload_successful`

func TestReloadOnFileChangeAndSIGHUP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, opsYAML(up.URL, "2/1h"))
	if g.status("/a") != 200 || g.status("/a") != 200 || g.status("/a") != 429 {
		t.Fatal("the first configuration (2/1h) is not in force")
	}
	if v := g.metric(lastReloadOK); v != 1 {
		t.Errorf("%s = %v after the first load, want 1", lastReloadOK, v)
	}

	// A file change that raises the limit takes effect without a restart.
	g.write(opsYAML(up.URL, "5/1h"))
	g.waitMetric(reloadOK, 2)
	if code := g.status("/a"); code != 200 {
		t.Errorf("after raising the limit by editing the file: %d, want 200", code)
	}

	// An invalid file is rejected and logged with every problem, the
	// parser's (an unknown key) and the compiler's (a limit) alike; the
	// running rules stay.
	g.write(opsYAML(up.URL, "five/1h") + "bogus_key: 1\n")
	g.waitMetric(reloadFailed, 1)
	if code := g.status("/a"); code != 200 {
		t.Errorf("after an invalid file: %d, want 200 (the previous rules)", code)
	}
	if !strings.Contains(g.stderr.String(), "configuration rejected: the previous configuration keeps running") ||
		!strings.Contains(g.stderr.String(), "five/1h") || !strings.Contains(g.stderr.String(), "bogus_key") {
		t.Errorf("the rejection is not logged with every reason:\n%s", g.stderr.String())
	}
	// The rejection shows until a load succeeds, not only as it happens:
	// in the metrics, and with its problems in the admin API.
	if v := g.metric(lastReloadOK); v != 0 {
		t.Errorf("%s = %v after a rejected file, want 0", lastReloadOK, v)
	}
	if rej := g.adminConfig()["rejected"]; rej == nil || rej.(map[string]any)["reason"] != "file changed" ||
		!strings.Contains(rej.(map[string]any)["problems"].(string), "five/1h") ||
		!strings.Contains(rej.(map[string]any)["problems"].(string), "bogus_key") {
		t.Errorf("GET /admin/config after a rejected file: rejected = %v, want the reason and every problem", rej)
	}
	g.write(opsYAML(up.URL, "6/1h"))
	g.waitMetric(reloadOK, 3)
	if v := g.metric(lastReloadOK); v != 1 {
		t.Errorf("%s = %v after a valid file, want 1", lastReloadOK, v)
	}
	if rej, ok := g.adminConfig()["rejected"]; ok {
		t.Errorf("GET /admin/config after a valid file: rejected = %v, want none", rej)
	}

	// SIGHUP reloads too (the watcher is off here, so only SIGHUP can).
	g2 := startServe(t, opsYAML(up.URL, "1/1h"), "--no-watch")
	g2.status("/b")
	g2.write(opsYAML(up.URL, "3/1h"))
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	g2.waitMetric(reloadOK, 2)
	if code := g2.status("/b"); code != 200 {
		t.Errorf("after SIGHUP with a higher limit: %d, want 200", code)
	}
}

// TestReloadSharedAddressNamesTheFlag: a reload whose file now gives a
// listener the address a flag gives another is rejected at the file's
// listener, naming the flag: the flags have not changed, the file has.
func TestReloadSharedAddressNamesTheFlag(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	pub, internal := testnet.FreeAddr(t), testnet.FreeAddr(t)
	g := startServe(t, opsYAML(up.URL, "2/1h"), "--listen", pub, "--internal-listen", internal)
	g.pub = pub // the flag's, not the file's
	for i, tc := range []struct {
		name, yaml, want string
	}{
		{"admin.listen takes --listen's", strings.Replace(opsYAML(up.URL, "2/1h"), "${ADM}", pub, 1),
			`:3: admin.listen: "` + pub + `" is also the public listen address, given by --listen`},
		{"admin.listen takes --internal-listen's", strings.Replace(opsYAML(up.URL, "2/1h"), "${ADM}", internal, 1),
			`:3: admin.listen: "` + internal + `" is also the internal listen address, given by --internal-listen`},
		{"decide.listen takes --listen's", opsYAML(up.URL, "2/1h") +
			"client_ip: {trusted_proxies: [127.0.0.1/32]}\ndecide: {listen: \"" + pub + "\", protocol: nginx}\n",
			`:9: decide.listen: "` + pub + `" is also the public listen address, given by --listen`},
	} {
		g.write(tc.yaml)
		g.waitMetric(reloadFailed, float64(i+1))
		rej, _ := g.adminConfig()["rejected"].(map[string]any)
		if got, want := rej["problems"], g.conf+tc.want; got != want {
			t.Errorf("%s: the reload is rejected for %q, want %q", tc.name, got, want)
		}
	}
	if code := g.status("/a"); code != 200 {
		t.Errorf("after the rejected files: %d, want 200 (the first configuration)", code)
	}
}

// engines runs test once for each server.engine, the config's server
// line for it given.
func engines(t *testing.T, test func(t *testing.T, server string)) {
	for _, engine := range config.Engines {
		t.Run(engine, func(t *testing.T) {
			test(t, "server: {read_header_timeout: 300ms, engine: "+engine+"}")
		})
	}
}

func TestInFlightRequestFinishesOnShutdown(t *testing.T) {
	engines(t, testInFlightRequestFinishesOnShutdown)
}

func testInFlightRequestFinishesOnShutdown(t *testing.T, server string) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "the upstream's answer")
	}))
	defer up.Close()
	g := startServe(t, strings.Replace(opsYAML(up.URL, "100/1m"), "server: {read_header_timeout: 300ms}", server, 1))

	type result struct {
		code int
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + g.pub + "/slow")
		if err != nil {
			res <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{resp.StatusCode, string(b), err}
	}()
	<-arrived
	g.cancel() // what SIGTERM does: main's signal context ends
	// The gateway stops accepting new connections...
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", g.pub)
		if err != nil {
			break
		}
		c.Close()
		if i == 500 {
			t.Fatal("the listener still accepts connections after shutdown began")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// ...and the request in flight still gets its upstream's answer.
	close(release)
	r := <-res
	if r.err != nil || r.code != 200 || r.body != "the upstream's answer" {
		t.Errorf("in-flight request: %d %q %v, want 200 with the upstream's answer", r.code, r.body, r.err)
	}
	if code := <-g.done; code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	g.done <- 0 // for the cleanup
}

func TestSlowlorisIsCutOff(t *testing.T) { engines(t, testSlowlorisIsCutOff) }

func testSlowlorisIsCutOff(t *testing.T, server string) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, strings.Replace(opsYAML(up.URL, "1000/1m"), "server: {read_header_timeout: 300ms}", server, 1))

	conn, err := net.Dial("tcp", g.pub)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	// Trickle one byte at a time for up to 20 s; the server must hang up
	// long before (after 300 ms), while serving other clients meanwhile.
	cut := false
	for i := 0; i < 400 && !cut; i++ {
		time.Sleep(50 * time.Millisecond)
		if _, err := conn.Write([]byte("a")); err != nil {
			cut = true
		}
		if i == 2 {
			if code := g.status("/normal"); code != 200 {
				t.Errorf("a normal client during the slowloris: %d, want 200", code)
			}
		}
		conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		var b [1]byte
		if _, err := conn.Read(b[:]); err != nil && !isTimeout(err) {
			cut = true // EOF or reset: the server closed the connection
		} else if err == nil {
			cut = true // the server answered (408) instead of waiting
		}
	}
	if !cut {
		t.Error("a client trickling its headers for 20 s was never cut off")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestShutdownGraceRunningOutIsLogged(t *testing.T) {
	engines(t, testShutdownGraceRunningOutIsLogged)
}

// A request still running when server.shutdown_grace runs out is cut off:
// the operator reads that in the log, with how many were.
func testShutdownGraceRunningOutIsLogged(t *testing.T, server string) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
	}))
	defer up.Close()
	defer close(release) // before up.Close, which waits for the handler
	server = strings.Replace(server, "read_header_timeout: 300ms", "read_header_timeout: 300ms, shutdown_grace: 1ms", 1)
	g := startServe(t, strings.Replace(opsYAML(up.URL, "100/1m"), "server: {read_header_timeout: 300ms}", server, 1))

	go func() {
		if resp, err := http.Get("http://" + g.pub + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	g.cancel() // what SIGTERM does
	if code := <-g.done; code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	g.done <- 0 // for the cleanup
	log := g.stderr.String()
	if !strings.Contains(log, `"msg":"shutdown grace ran out: requests still in flight are cut off","grace":"1ms","in_flight":1,"listeners":["public"]`) {
		t.Errorf("the request cut off at the end of the grace is not in the log:\n%s", log)
	}
}

// TestEveryGatewayListenerStopsAcceptingOnShutdown: once the drain has
// begun, the internal listener accepts no connection either, while a
// request of the public listener is still in flight.
func TestEveryGatewayListenerStopsAcceptingOnShutdown(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(arrived)
			<-release
		}
	}))
	defer up.Close()
	defer close(release) // before up.Close, which waits for the handler
	internal := testnet.FreeAddr(t)
	g := startServeEnv(t, map[string]string{"INT": internal},
		opsYAML(up.URL, "100/1m")+"internal: {listen: \"${INT}\"}\n")
	go func() {
		if resp, err := http.Get("http://" + g.pub + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	g.cancel() // what SIGTERM does
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", internal)
		if err != nil {
			break
		}
		c.Close()
		if i == 500 {
			t.Fatal("the internal listener still accepts connections while the public one drains")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReloadEnvNoLongerDefined: a reload whose file no longer defines the
// environment --env names is rejected naming the flag, as a start with it
// would be, and the file, as every problem of a reload is: the flag has
// not changed, the file has.
func TestReloadEnvNoLongerDefined(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, opsYAML(up.URL, "2/1h")+"environments: {staging: {}}\n", "--env", "staging")
	g.write(opsYAML(up.URL, "2/1h") + "environments: {production: {}}\n")
	g.waitMetric(reloadFailed, 1)
	want := g.conf + `: --env: environment "staging" is not defined (allowed: production)`
	rej, _ := g.adminConfig()["rejected"].(map[string]any)
	if got := rej["problems"]; got != want {
		t.Errorf("the reload is rejected for %q, want %q", got, want)
	}
	if logged := strings.ReplaceAll(g.stderr.String(), `\"`, `"`); !strings.Contains(logged, `"problems":"`+want+`"`) {
		t.Errorf("the rejection is not logged with %q:\n%s", want, g.stderr.String())
	}
}
