package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// refusalMaxHeader is the head limit of TestProtocolRefusalsCounted's
// servers: small, so that a head far over it (past net/http's own 4 KiB
// of slack) is cheap to send.
const refusalMaxHeader = 4096

// TestProtocolRefusalsCounted: every answer sent on the gateway's
// listener is counted once in floodgate_requests_total, the requests the
// server refuses before the gateway sees them included (route ""), on
// both engines, whether the policy or Go's parser refuses them; none of
// them reached a route, so none has an access-log record.
func TestProtocolRefusalsCounted(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(up.Close)
	yaml := `
upstreams: {api: {url: "` + up.URL + `"}}
routes: [{name: api, path: /ok, upstream: api}]
server: {max_uri_bytes: 256}
`
	big := strings.Repeat("a", 2*refusalMaxHeader)
	huge := strings.Repeat("a", 5*refusalMaxHeader)
	tests := []struct {
		name string
		raw  string
		want []int // the answers on the connection, in order
		// uncounted: the server's own answer to OPTIONS *, which is no
		// refusal and reaches nothing (docs/answers.md).
		uncounted bool
	}{
		{name: "comma in Host", raw: "GET /ok HTTP/1.1\r\nHost: bad,host\r\n\r\n", want: []int{400}},
		{name: "no Host", raw: "GET /ok HTTP/1.1\r\n\r\n", want: []int{400}},
		{name: "head over the limit", raw: "GET /ok HTTP/1.1\r\nHost: a\r\nX-Big: " + big[:refusalMaxHeader] + "\r\n\r\n", want: []int{431}},
		{name: "head far over the limit", raw: "GET /ok HTTP/1.1\r\nHost: a\r\nX-Big: " + huge + "\r\n\r\n", want: []int{431}},
		{name: "CONNECT", raw: "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", want: []int{501}},
		{name: "HTTP/2 preface", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", want: []int{505}},
		{name: "HTTP/3.0", raw: "GET /ok HTTP/3.0\r\nHost: a\r\n\r\n", want: []int{505}},
		{name: "unknown expectation", raw: "GET /ok HTTP/1.1\r\nHost: a\r\nExpect: bogus\r\n\r\n", want: []int{417}},
		{name: "Content-Length and Transfer-Encoding", raw: "POST /ok HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", want: []int{400}},
		{name: "unknown transfer coding", raw: "POST /ok HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", want: []int{501}},
		{name: "bad request line", raw: "NOT A REQUEST\r\n\r\n", want: []int{400}},
		{name: "target too long", raw: "GET /" + big[:300] + " HTTP/1.1\r\nHost: a\r\n\r\n", want: []int{414}},
		{name: "refused after an answer", raw: "GET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /ok HTTP/1.1\r\nHost: bad,host\r\n\r\n", want: []int{200, 400}},
		{name: "expectation after answers", raw: "GET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /ok HTTP/1.1\r\nHost: a\r\n\r\nGET /ok HTTP/1.1\r\nHost: a\r\nExpect: bogus\r\n\r\n", want: []int{200, 200, 417}},
		{name: "OPTIONS *", raw: "OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", want: []int{200}, uncounted: true},
	}
	for _, engine := range []string{config.EngineFloodgate, config.EngineNetHTTP} {
		t.Run(engine, func(t *testing.T) {
			f, err := config.Parse("refusals.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			f.Config.ApplyDefaults()
			m := telemetry.NewMetrics("test")
			var access testnet.Buffer
			srv, problems := gateway.NewServer(f, []byte(yaml), gateway.Options{
				Store: gateway.NewMemoryStore(0, time.Now, m), Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info"),
				AccessLog: telemetry.NewAccessLog(&access),
			})
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			addr := serveEngine(t, engine, srv)
			adm := admin.Handler(admin.Options{Gatherer: m.Registry})
			for _, tc := range tests {
				before := requestCounts(t, adm)
				logged := len(access.String())
				got := rawExchanges(t, addr, tc.raw, len(tc.want))
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: answers %v, want %v", tc.name, got, tc.want)
					continue
				}
				after := requestCounts(t, adm)
				want := map[string]float64{}
				for _, code := range tc.want {
					if tc.uncounted {
						break
					}
					route := ""
					if code == 200 {
						route = "api"
					}
					want[route+" "+strconv.Itoa(code)]++
				}
				for k := range after {
					if d := after[k] - before[k]; d != want[k] {
						t.Errorf("%s: floodgate_requests_total of route and code %q rose by %v, want %v", tc.name, k, d, want[k])
					}
				}
				for k, n := range want {
					if _, ok := after[k]; !ok {
						t.Errorf("%s: no floodgate_requests_total series for %q, want %v", tc.name, k, n)
					}
				}
				if lines := float64(strings.Count(access.String()[logged:], "\n")); lines != want["api 200"] {
					t.Errorf("%s: %v access-log records, want %v (one per request that reached a route)", tc.name, lines, want["api 200"])
				}
			}
		})
	}
}

// serveEngine serves h on a loopback port with the engine named, as
// `floodgate serve` builds it, and returns the address.
func serveEngine(t *testing.T, engine string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	type server interface {
		Serve(net.Listener) error
		Close() error
	}
	var s server
	if engine == config.EngineNetHTTP {
		s = h1server.NewNetHTTPServer(&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: refusalMaxHeader})
	} else {
		s = &h1server.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: refusalMaxHeader}
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// rawExchanges writes raw on a new connection and reads n answers.
func rawExchanges(t *testing.T, addr, raw string, n int) []int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var codes []int
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("reading answer %d to %.40q: %v", len(codes)+1, raw, err)
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// requestCounts scrapes floodgate_requests_total, by "route code".
func requestCounts(t *testing.T, adm http.Handler) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	adm.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		rest, ok := strings.CutPrefix(line, "floodgate_requests_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		var code, route string
		for _, l := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(l, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "code":
				code = v
			case "route":
				route = v
			}
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[route+" "+code] = n
	}
	return out
}
