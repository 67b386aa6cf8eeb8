package gateway_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/testnet"
)

// TestNoUserAgentIsScript: a request without a User-Agent is a script's
// in the decision log and the access log (every browser sends one, so
// a limit sized for scripts covers the clients that send none), and
// docs/metrics.md names only the classes the decision log writes.
func TestNoUserAgentIsScript(t *testing.T) {
	up := newUpstream(t)
	yaml := `
upstreams: {api: {url: "` + up.URL + `"}}
rules:
  - {name: no-x, when: "request.path == '/x'", action: deny}
`
	f, err := config.Parse("ua.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("test")
	var decisions, access testnet.Buffer
	c := newClock()
	g, problems := gateway.New(f, gateway.Options{
		Store: gateway.NewMemoryStore(0, c.Now, m), Metrics: m, Logger: telemetry.NewLogger(&decisions, "info"),
		AccessLog: telemetry.NewAccessLog(&access), Now: c.Now,
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ts := newFront(t, g)
	defer ts.Close()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("GET /x = %d, want 403 from the deny rule", resp.StatusCode)
	}

	for _, l := range []struct {
		name string
		buf  *testnet.Buffer
		msg  string
	}{{"decision log", &decisions, "decision"}, {"access log", &access, "access"}} {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
			var rec struct {
				Msg     string `json:"msg"`
				UAClass string `json:"ua_class"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: not a JSON line: %q", l.name, line)
			}
			if rec.Msg == l.msg {
				got = append(got, rec.UAClass)
			}
		}
		if !slices.Equal(got, []string{"script"}) {
			t.Errorf("%s: ua_class %q, want [script]\n%s", l.name, got, l.buf.String())
		}
	}

	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `ua_class` \\|.*$").FindString(string(doc))
	if row == "" {
		t.Fatal("docs/metrics.md has no ua_class row in the decision log's table")
	}
	var named []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row, -1) {
		if m[1] != "ua_class" && m[1] != "decision" && m[1] != "allowed" {
			named = append(named, m[1])
		}
	}
	// The classes uaclass.Classify returns: Unknown stands for a log
	// format that records no User-Agent, never for a request.
	if want := []string{"browser", "script", "crawler"}; !slices.Equal(named, want) {
		t.Errorf("docs/metrics.md's ua_class row names %q, want %q:\n%s", named, want, row)
	}
}
