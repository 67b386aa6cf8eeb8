package gateway_test

import (
	"fmt"
	"io"
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

func reloadYAML(upstream, limit string) string {
	return fmt.Sprintf(`
upstreams: {api: {url: %q}}
rules:
  - {name: per-ip, limits: [%s]}
  - {name: shadow, action: count, limits: [1000000/1m]}
`, upstream, limit)
}

func parse(t *testing.T, yaml string) *config.File {
	t.Helper()
	f, err := config.Parse("reload.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	f.Config.ApplyDefaults()
	return f
}

// TestHundredReloadsUnderTraffic: continuous traffic from several clients
// while the configuration is reloaded 100 times (valid and invalid files
// alternating with limit changes): no request fails, and every reload
// either fully applies or fully fails.
func TestHundredReloadsUnderTraffic(t *testing.T) {
	up := newUpstream(t)
	m := telemetry.NewMetrics("test")
	c := newClock()
	first := reloadYAML(up.URL, "1000000/1m")
	srv, problems := gateway.NewServer(parse(t, first), []byte(first), gateway.Options{
		Store: gateway.NewMemoryStore(0, c.Now, m), Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info"),
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	ts := newFront(t, srv)
	defer ts.Close()

	var stop atomic.Bool
	var sent, failed atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := frontClient(t)
			for i := 0; !stop.Load() && i < 100000; i++ {
				req, _ := http.NewRequest("GET", ts.URL+"/x", nil)
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", w))
				resp, err := client.Do(req)
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	applied, rejected := 0, 0
	for i := range 100 {
		// Each reload comes after another request was answered, so that
		// the reloads are under traffic however slow the machine.
		for last := sent.Load(); sent.Load() == last; {
			time.Sleep(100 * time.Microsecond)
		}
		yaml := reloadYAML(up.URL, fmt.Sprintf("%d/1m", 1000000+i))
		if i%10 == 9 {
			yaml = strings.Replace(yaml, "limits: [", "limits: [bogus ", 1) // invalid
		}
		f, err := config.Parse("reload.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
		if err == nil {
			f.Config.ApplyDefaults()
		}
		if _, problems := srv.Reload(f, []byte(yaml)); len(problems) > 0 {
			rejected++
		} else {
			applied++
		}
	}
	stop.Store(true)
	wg.Wait()
	if applied != 90 || rejected != 10 {
		t.Errorf("applied %d, rejected %d; want 90 and 10", applied, rejected)
	}
	if sent.Load() == 0 || failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during 100 reloads, want none", failed.Load(), sent.Load())
	}
	got := srv.Current().Config().Config.Rules[0].Limits[0]
	if got != "1000098/1m" {
		t.Errorf("live limit %s, want the last valid one, 1000098/1m", got)
	}
	h := &harness{t: t, admin: admin.Handler(admin.Options{Gatherer: m.Registry})}
	if s, f := h.metric(`floodgate_config_reloads_total{result="success"}`), h.metric(`floodgate_config_reloads_total{result="failure"}`); s != 91 || f != 10 {
		t.Errorf("reload metrics: success %v (want 91 with the first load), failure %v (want 10)", s, f)
	}
	if h.metric(fmt.Sprintf(`floodgate_config_info{hash=%q}`, srv.Hash())) != 1 {
		t.Errorf("floodgate_config_info does not carry the live hash %s", srv.Hash())
	}
}

// TestReloadKeepsCounters: a rule whose name, key and limit are unchanged
// keeps its counter across a reload; one whose limit changed starts afresh.
func TestReloadKeepsCounters(t *testing.T) {
	up := newUpstream(t)
	m := telemetry.NewMetrics("test")
	c := newClock()
	yaml := func(a, b string) string {
		return fmt.Sprintf(`
upstreams: {api: {url: %q}}
rules:
  - {name: changed, action: count, limits: [%s]}
  - {name: kept, limits: [%s]}
`, up.URL, b, a)
	}
	y1 := yaml("5/1h", "5/1h")
	srv, problems := gateway.NewServer(parse(t, y1), []byte(y1), gateway.Options{
		Store: gateway.NewMemoryStore(0, c.Now, m), Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info"),
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	hit := func() int {
		r := httptest.NewRequest("GET", "/x", nil)
		r.RemoteAddr = "198.51.100.1:1"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w.Code
	}
	for range 5 {
		hit()
	}
	y2 := yaml("5/1h", "6/1h")
	if _, problems := srv.Reload(parse(t, y2), []byte(y2)); len(problems) > 0 {
		t.Fatal(problems)
	}
	if code := hit(); code != 429 {
		t.Errorf("after reload, 6th request: %d, want 429 (the unchanged rule kept its count)", code)
	}
	r := httptest.NewRequest("GET", "/x", nil)
	r.RemoteAddr = "198.51.100.1:1"
	ex := srv.Current().Explain(t.Context(), r)
	if rem := ex.Rules[0].Remaining; rem == nil || *rem != 5 {
		t.Errorf("changed rule remaining = %v, want 5 (a new counter that saw one request)", rem)
	}
}

// TestReloadReportsRestartOnlySettings: a reload reports the settings it
// cannot apply — the server's too, which are read when the listeners start
// (before, a changed shutdown_grace was dropped without a word) — and keeps
// reporting them on every later reload while the file differs from what
// the process started with.
func TestReloadReportsRestartOnlySettings(t *testing.T) {
	up := newUpstream(t)
	m := telemetry.NewMetrics("test")
	base := reloadYAML(up.URL, "10/1m")
	srv, problems := gateway.NewServer(parse(t, base), []byte(base), gateway.Options{
		Store: gateway.NewMemoryStore(0, nil, m), Metrics: m, Logger: telemetry.NewLogger(io.Discard, "info"),
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	changed := base + "server: {shutdown_grace: 2s, idle_timeout: 5s, read_header_timeout: 3s, engine: net/http}\nlisten: 127.0.0.1:1\n" +
		"log: {level: debug, access: stdout}\nstore: {failure_policy: fail_closed}\n"
	// The store's failure policy is the rules': a reload applies it.
	want := "listen log.level log.access server.read_header_timeout server.idle_timeout server.shutdown_grace server.engine"
	for i, step := range []struct{ yaml, want string }{
		{changed, want},
		{reloadYAML(up.URL, "20/1m") + strings.TrimPrefix(changed, base), want}, // a limit changes too: still reported
		{base, ""}, // back to what the process runs
		{base + "server: {shutdown_grace: 30000ms, idle_timeout: 2m}\n", ""}, // the defaults, written otherwise
	} {
		ignored, problems := srv.Reload(parse(t, step.yaml), []byte(step.yaml))
		if len(problems) > 0 {
			t.Fatalf("reload %d: %v", i+1, problems)
		}
		if got := strings.Join(ignored, " "); got != step.want {
			t.Errorf("reload %d: ignored %q, want %q", i+1, got, step.want)
		}
	}
}
