package admin_test

// The dashboard in a real browser: `floodgate serve` runs in-process with
// examples/mavedb.yaml in front of a test upstream, with candidate limits
// added to its CSV rule as a tuning step would add them, traffic makes
// its rules block, deny and would-block, and headless Chromium loads
// /admin/ from the admin listener. The test asserts on the DOM Chromium
// dumps and writes a screenshot; `go test ./internal/admin -run
// TestDashboardInChromium -update` refreshes docs/img/dashboard.png with it.
//
// Chromium is required: without it the test fails, unless
// FLOODGATE_SKIP_BROWSER=1 (then it skips, saying so). FLOODGATE_CHROMIUM
// names the binary when it is not chromium, chromium-browser,
// google-chrome or google-chrome-stable on PATH.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/browsertest"
	"github.com/floodgate/floodgate/internal/cli"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/testnet"
)

var update = flag.Bool("update", false, "rewrite docs/img/dashboard.png from the browser check's screenshot")

const (
	mavedbExample = "../../examples/mavedb.yaml"
	docScreenshot = "../../docs/img/dashboard.png"
)

func TestDashboardInChromium(t *testing.T) {
	browsertest.Path(t) // before starting anything: no browser, no test

	// The MaveDB API: answers every request at once.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		_, _ = io.WriteString(w, "accession,score\nurn:mavedb:00000001-a-1#1,0.5\n")
	}))
	defer up.Close()

	// floodgate serve, in-process, with the example as it ships but for
	// two candidate limits on the CSV rule, the step before choosing its
	// threshold (docs/tuning.md). No admin token: the dashboard then
	// answers to loopback peers only, which Chromium is. The load
	// balancer is on loopback: X-Forwarded-For names the clients.
	example, err := os.ReadFile(mavedbExample)
	if err != nil {
		t.Fatal(err)
	}
	const csvLimits = "    limits: [100/5m]\n"
	if bytes.Count(example, []byte(csvLimits)) != 1 {
		t.Fatalf("%s: want the CSV rule's %q once", mavedbExample, csvLimits)
	}
	// The copy is examples/mavedb.yaml in a directory of its own, which
	// becomes the working directory: the page names the file as the
	// documentation's screenshot should.
	screenshotDoc, err := filepath.Abs(docScreenshot)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	const withCandidates = "examples/mavedb.yaml"
	if err := os.MkdirAll(filepath.Join(root, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	example = bytes.Replace(example, []byte(csvLimits), []byte(csvLimits+"    candidates: [50/5m, 200/5m]\n"), 1)
	if err := os.WriteFile(filepath.Join(root, withCandidates), example, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	t.Setenv("FLOODGATE_LISTEN", pub)
	t.Setenv("FLOODGATE_ADMIN_LISTEN", adm)
	t.Setenv("FLOODGATE_UPSTREAM", up.URL)
	t.Setenv("FLOODGATE_TRUSTED_PROXIES", "127.0.0.0/8")
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testnet.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, []string{"serve", "--config", withCandidates, "--no-watch"}, io.Discard, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("floodgate serve exited %d:\n%s", code, stderr.String())
		}
	}()
	waitUp(t, "http://"+adm+"/healthz", &stderr)

	// Traffic from three clients behind the load balancer.
	client := &http.Client{Timeout: 10 * time.Second}
	send := func(n int, clientIP, path, ua string) map[int]int {
		codes := map[int]int{}
		for range n {
			req, _ := http.NewRequest("GET", "http://"+pub+path, nil)
			req.Header.Set("X-Forwarded-For", clientIP)
			req.Header.Set("User-Agent", ua)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
		}
		return codes
	}
	const scores = "/api/v1/score-sets/urn:mavedb:00000001-a-1/scores"
	// A script downloading CSVs: 100 / 5 min, then 429 (rate-limit-csv-endpoints).
	// (About 100: the sliding window may admit one or two more when the
	// requests straddle a window boundary.)
	csv := send(110, "203.0.113.10", scores, "python-requests/2.31.0")
	if csv[429] < 5 || csv[200]+csv[429] != 110 {
		t.Fatalf("CSV downloads: %v, want about 100×200 and 10×429", csv)
	}
	// A declared AI crawler on a bulk endpoint: 403 (block-ai-crawlers-on-csv).
	bot := send(5, "203.0.113.20", scores, "Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)")
	if bot[403] != 5 {
		t.Fatalf("AI crawler: %v, want 5×403", bot)
	}
	// A busy client over 300 requests / min: counted, never blocked
	// (shadow-requests). 400, so that some are over the limit even when a
	// slow run straddles a minute boundary (the sliding window then
	// weighs the previous minute's requests down).
	if c := send(400, "203.0.113.30", "/api/v1/score-sets/urn:mavedb:00000001-a-1", "Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"); c[200] != 400 {
		t.Fatalf("busy client: %v, want 400×200 (a count rule never blocks)", c)
	}

	// Chromium, headless, with nothing beyond loopback reachable: every
	// host name but 127.0.0.1 fails to resolve, and any other address goes
	// to a proxy that is not there.
	url := "http://" + adm + "/admin/"
	dir := t.TempDir()
	shot := filepath.Join(dir, "dashboard.png")
	run := func(args ...string) string {
		t.Helper()
		return browsertest.Run(t, dir, append([]string{"--window-size=1280,1600", "--force-device-scale-factor=1"}, args...)...)
	}
	dom := run("--dump-dom", url)

	// Every rule of the example is on the page, with what it did.
	f, err := config.Load(withCandidates, "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	got := domCells(t, dom)
	for _, r := range f.Config.Rules {
		if _, ok := got[r.Name]; !ok {
			t.Errorf("rule %s is not on the page", r.Name)
		}
	}
	for _, c := range []struct {
		rule, decision string
		min, max       int
	}{
		{"rate-limit-csv-endpoints", "blocked", csv[429], csv[429]}, // exactly the 429s answered
		{"block-ai-crawlers-on-csv", "denied", 5, 5},
		{"shadow-requests", "would_block", 1, 100}, // 400 - 300 at most
	} {
		for _, window := range []string{"hour", "total"} {
			if n := got[c.rule][window+" "+c.decision]; n < c.min || n > c.max || n == 0 {
				t.Errorf("%s %s %s = %d on the page, want %d to %d (and not 0)", c.rule, window, c.decision, n, c.min, c.max)
			}
		}
	}
	// Under the CSV rule, its candidates: every CSV download was matched
	// (the crawler's were denied first) and counted by each. 50/5m would
	// have blocked about 60 of the 110, 200/5m none.
	cands := domCandidates(t, dom)
	for _, c := range []struct {
		candidate string
		min, max  int
	}{
		{"50/5m", 50, 60},
		{"200/5m", 0, 0},
	} {
		for _, window := range []string{"hour", "total"} {
			got := cands["rate-limit-csv-endpoints "+c.candidate][window]
			if got.Allowed+got.WouldBlock != 110 || got.WouldBlock < c.min || got.WouldBlock > c.max {
				t.Errorf("candidate %s %s = %+v on the page, want 110 decisions, %d to %d would-block", c.candidate, window, got, c.min, c.max)
			}
			if want := fmt.Sprintf("%.1f%%", float64(got.WouldBlock)*100/110); got.WouldBlock > 0 && got.Share != want {
				t.Errorf("candidate %s %s share = %q, want %q of the rule's 110 matched requests", c.candidate, window, got.Share, want)
			}
		}
	}
	for _, want := range []string{`data-mode="enforce"`, `id="hash">sha256:`, `data-status="not-configured"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("DOM:\n%s\nfloodgate log:\n%s", dom, stderr.String())
	}

	// A window 1200 px wide holds the page: no sideways scrolling, the
	// rules table within it.
	p := browsertest.Open(t, filepath.Join(dir, "narrow"), 1200, 900)
	p.Navigate(url)
	var fit struct{ Scroll, Client, TableRight, Window float64 }
	p.Eval(`(() => { const d = document.documentElement;
	  return {Scroll: d.scrollWidth, Client: d.clientWidth, TableRight: document.getElementById('rules-table').getBoundingClientRect().right, Window: innerWidth}; })()`, &fit)
	if fit.Scroll > fit.Client || fit.TableRight > fit.Window {
		t.Errorf("at 1200 px the dashboard scrolls sideways: scrollWidth %v, clientWidth %v; the rules table ends at %v of %v",
			fit.Scroll, fit.Client, fit.TableRight, fit.Window)
	}
	t.Logf("at 1200 px: %+v", fit)

	run("--screenshot="+shot, url)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 1600 {
		t.Errorf("screenshot is %dx%d, want 1280x1600", b.Dx(), b.Dy())
	}
	if *update {
		if err := os.WriteFile(screenshotDoc, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", screenshotDoc)
	} else {
		t.Logf("screenshot: %s (-update copies it to docs/img/dashboard.png)", shot)
	}
}

// domCellRE finds the rule table's counts in the DOM Chromium dumps
// (attributes in the order the page writes them).
var domCellRE = regexp.MustCompile(`data-rule="([^"]+)" data-window="(hour|total)" data-decision="([a-z_]+)">([0-9,]+)<`)

// domCells returns rule → "window decision" → count.
func domCells(t *testing.T, dom string) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, m := range regexp.MustCompile(`<tr data-rule="([^"]+)"`).FindAllStringSubmatch(dom, -1) {
		out[m[1]] = map[string]int{}
	}
	for _, m := range domCellRE.FindAllStringSubmatch(dom, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[4], ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		if out[m[1]] == nil {
			out[m[1]] = map[string]int{}
		}
		out[m[1]][m[2]+" "+m[3]] = n
	}
	return out
}

// domCandidateRE finds the counts of the rules table's candidate rows,
// and the share that follows a would-block.
var domCandidateRE = regexp.MustCompile(`data-rule="([^"]+)" data-candidate="([^"]+)" data-window="(hour|total)" data-decision="(allowed|would_block)">([0-9,]+)(?:<span class="share">([^<]*) of matched</span>)?<`)

// candidateWindow is a candidate's row in one window of the rules table.
type candidateWindow struct {
	Allowed, WouldBlock int
	Share               string // "45.5%", after a would-block of the rule's matched requests
}

// domCandidates returns "rule candidate" → window → its counts.
func domCandidates(t *testing.T, dom string) map[string]map[string]candidateWindow {
	t.Helper()
	out := map[string]map[string]candidateWindow{}
	for _, m := range domCandidateRE.FindAllStringSubmatch(dom, -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[5], ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		k := m[1] + " " + m[2]
		if out[k] == nil {
			out[k] = map[string]candidateWindow{}
		}
		w := out[k][m[3]]
		if m[4] == "allowed" {
			w.Allowed = n
		} else {
			w.WouldBlock, w.Share = n, m[6]
		}
		out[k][m[3]] = w
	}
	return out
}

func waitUp(t *testing.T, url string, log fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never answered; log:\n%s", url, log.String())
}
