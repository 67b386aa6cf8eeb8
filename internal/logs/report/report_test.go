package report

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/browsertest"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/replay"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const excerpt = "../testdata/elastic_excerpt.log"

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func baselineResult(t testing.TB) *baseline.Result {
	t.Helper()
	b := baseline.New(nil)
	files, err := logs.ReadFiles([]string{excerpt}, logs.ReadOptions{}, func(r *logs.Record) { b.Add(r) })
	if err != nil {
		t.Fatal(err)
	}
	r := b.Result(baseline.ResultOptions{Top: 5, Namer: baseline.Namer{Key: []byte("golden")}})
	c := logs.Total(files)
	r.Lines, r.Parsed, r.Unparsed, r.Files = c.Lines, c.Parsed, c.Unparsed, files
	return r
}

func replayResult(t testing.TB) *replay.Result {
	t.Helper()
	return replayResultWith(t, []string{"100/5m", "20/1m"})
}

func replayResultWith(t testing.TB, limits []string) *replay.Result {
	t.Helper()
	set, err := replay.AdHocRules(limits, "fixed_window")
	if err != nil {
		t.Fatal(err)
	}
	rp := replay.New(replay.Options{Rules: set, LogOnly: true})
	files, err := rp.ReadFiles(context.Background(), []string{excerpt}, logs.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rp.Result()
	c := logs.Total(files)
	r.Lines, r.Parsed, r.Unparsed, r.Files = c.Lines, c.Parsed, c.Unparsed, files
	return r
}

func TestBaselineTable(t *testing.T) {
	var buf bytes.Buffer
	BaselineTable(&buf, baselineResult(t), false)
	golden(t, "baseline.golden", buf.String())
}

func TestReplayTable(t *testing.T) {
	var buf bytes.Buffer
	ReplayTable(&buf, replayResult(t))
	golden(t, "replay.golden", buf.String())
}

// checkPage checks what makes a page self-contained and accessible.
func checkPage(t *testing.T, page string, figures int) {
	t.Helper()
	for _, want := range []string{`<html lang="en">`, `<meta charset="utf-8">`, "Content-Security-Policy", "default-src 'none'", "<h1>", "<h2 ", "<caption>", `scope="col"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Nothing to fetch: no script, no linked resources, no CSS imports or
	// URLs. (The SVG namespace is a name, not a fetch.)
	for _, bad := range []string{"<script", " src=", " href=", "url(", "@import", "<link", "<img", "<iframe"} {
		if strings.Contains(page, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	if n := strings.Count(page, "<svg "); n != figures {
		t.Errorf("page has %d charts, want %d", n, figures)
	}
	// Every chart is an image with a title and a description, in a
	// figure with a caption.
	for _, want := range []string{`role="img"`, "<title id=", "<desc id=", "<figcaption"} {
		if n := strings.Count(page, want); n != figures {
			t.Errorf("page has %d %q, want %d", n, want, figures)
		}
	}
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if ids[m[1]] {
			t.Errorf("id %q used twice", m[1])
		}
		ids[m[1]] = true
	}
}

func TestSummaryCountsInWords(t *testing.T) {
	// One request from one client is said so, in the table and the page.
	var b bytes.Buffer
	header(&b, "baseline", logs.Counts{Lines: 1, Parsed: 1}, 1, 1, "", "", nil)
	if got := b.String(); !strings.Contains(got, "; 1 request from 1 client\n") {
		t.Errorf("table summary %q", got)
	}
	if got := summaryLines(1, 1, 0, 1, 1, "", "")[0]; !strings.HasSuffix(got, " 1 request from 1 client.") {
		t.Errorf("page summary %q", got)
	}
	b.Reset()
	header(&b, "baseline", logs.Counts{Lines: 2, Parsed: 2}, 2, 2, "", "", nil)
	if got := b.String(); !strings.Contains(got, "; 2 requests from 2 clients\n") {
		t.Errorf("table summary %q", got)
	}
}

func TestBaselineHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := BaselineHTML(&buf, baselineResult(t)); err != nil {
		t.Fatal(err)
	}
	checkPage(t, buf.String(), 2)
}

func TestReplayHTML(t *testing.T) {
	var buf bytes.Buffer
	r := replayResult(t)
	if err := ReplayHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	checkPage(t, page, 4) // a timeline per rule, a peaks chart per window
	for _, want := range []string{"limit-100-per-5m: 100/5m", "limit-20-per-1m: 20/1m", "Would-blocks over time"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestReplayOrder: requests replayed out of time order and records left
// out are said, in the table and on the page, with how many, by how much
// at most and, for the late, why; a replay in order says nothing in the
// table.
func TestReplayOrder(t *testing.T) {
	r := replayResult(t)
	var table, page bytes.Buffer
	ReplayTable(&table, r)
	if err := ReplayHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "out of time order") || strings.Contains(table.String(), "left out") ||
		!strings.Contains(page.String(), "Every request was replayed at its own time, in time order.") {
		t.Errorf("a replay in time order:\n%s", table.String())
	}

	r.Order = replay.Order{Late: 4, LateMaxSeconds: 59, LateReasons: replay.LateReasons{Span: 2, Memory: 1, OpenFiles: 1},
		LeftOut: 1, LeftOutMaxAheadSeconds: 631148344}
	table.Reset()
	page.Reset()
	ReplayTable(&table, r)
	if err := ReplayHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"4 requests out of time order, up to 59s older than one replayed before (2 logged more than 5m0s after later ones in their files; " +
			"1 further back than the 64 MiB the open files hold together could reach; 1 in a file that waited while 32 others were open): replayed at that later time",
		"1 record left out: dated up to 7,304 days after the record that followed it in its file, and more than a day after every record before it",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
		if !strings.Contains(page.String(), want[1:]) {
			t.Errorf("page lacks %q", want[1:])
		}
	}
}

// TestNotReplayed: a rule that could not be replayed shows no numbers
// that would read as "refused nothing": the table and the page say it was
// not replayed and why, and the page draws no chart of zeros for it.
func TestNotReplayed(t *testing.T) {
	r := replayResult(t)
	r.Rules[0].NotReplayed = replay.NoSessions
	name := r.Rules[0].Name
	var table, page bytes.Buffer
	ReplayTable(&table, r)
	if err := ReplayHTML(&page, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), name+": not replayed: "+replay.NoSessions) {
		t.Errorf("table does not say %s was not replayed:\n%s", name, table.String())
	}
	for line := range strings.Lines(table.String()) {
		if strings.HasPrefix(line, name+" ") && (!strings.Contains(line, "not replayed") || strings.Contains(line, " 0 ")) {
			t.Errorf("table row of %s: %q, want \"not replayed\" and no count", name, line)
		}
	}
	if !strings.Contains(page.String(), name+": not replayed: ") {
		t.Errorf("page does not say %s was not replayed", name)
	}
	checkPage(t, page.String(), 3) // one timeline fewer
}

// TestEscaping: names from logs and configurations are text, never markup.
func TestEscaping(t *testing.T) {
	r := replayResult(t)
	r.Rules[0].Name = `<script>alert("x")</script>`
	r.Files[0].Name = `"><img src=x>`
	var buf bytes.Buffer
	if err := ReplayHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<script>") || strings.Contains(buf.String(), "<img") {
		t.Error("a name was written as markup")
	}
}

// TestHTMLInChromium opens a replay report in headless Chromium, with
// name resolution and proxies pointed nowhere so that nothing can be
// fetched, takes a screenshot and looks for the charts' colours in it. It
// needs Chromium (package browsertest: scripts/test installs it).
func TestHTMLInChromium(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := ReplayHTML(&buf, replayResult(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	out := browsertest.Run(t, dir, "--window-size=1000,2600", "--screenshot="+shot, "file://"+page)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The charts: vermillion bars and lines (would-blocks, browsers),
	// blue lines (all clients), green limit marks.
	counts := map[string]int{}
	colours := map[string][3]uint8{"vermillion": {0xD5, 0x5E, 0x00}, "blue": {0x00, 0x72, 0xB2}, "green": {0x00, 0x9E, 0x73}}
	distinct := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r8, g8, b8 := uint8(r>>8), uint8(g>>8), uint8(bl>>8)
			distinct[uint32(r8)<<16|uint32(g8)<<8|uint32(b8)] = true
			for name, c := range colours {
				if near(r8, c[0]) && near(g8, c[1]) && near(b8, c[2]) {
					counts[name]++
				}
			}
		}
	}
	if len(distinct) < 16 {
		t.Errorf("screenshot has %d colours: blank?", len(distinct))
	}
	for name := range colours {
		if counts[name] < 100 {
			t.Errorf("screenshot has %d %s pixels: chart missing? (counts %v)", counts[name], name, counts)
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "floodgate-report-screenshot.png")
		if data, err := os.ReadFile(shot); err == nil && os.WriteFile(keep, data, 0o644) == nil {
			t.Logf("screenshot kept at %s", keep)
		}
	}
	t.Logf("%dx%d, %d colours, chart pixels %v", b.Dx(), b.Dy(), len(distinct), counts)
}

func near(a, b uint8) bool {
	d := int(a) - int(b)
	return d >= -12 && d <= 12
}

// TestChartLabelsInChromium lays out the baseline and replay reports in
// headless Chromium at 1200 and 800 CSS pixels and measures every
// threshold label of every chart (getBoundingClientRect): each lies inside
// its chart and the window, and none is under the chart's legend.
func TestChartLabelsInChromium(t *testing.T) {
	browsertest.Path(t)
	dir := t.TempDir()
	var base, rep bytes.Buffer
	if err := BaselineHTML(&base, baselineResult(t)); err != nil {
		t.Fatal(err)
	}
	// Limits at both ends of the peaks chart, with long labels: the
	// highest lands at the right edge, under where a legend would go.
	r := replayResultWith(t, []string{"1/1m", "2/1m", "40/1m", "80/1m", "120/1m", "100/5m", "20/5m"})
	if err := ReplayHTML(&rep, r); err != nil {
		t.Fatal(err)
	}
	for _, pg := range []struct {
		name string
		html []byte
	}{{"baseline.html", base.Bytes()}, {"replay.html", rep.Bytes()}} {
		file := filepath.Join(dir, pg.name)
		if err := os.WriteFile(file, pg.html, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int{1200, 800} {
			p := browsertest.Open(t, filepath.Join(dir, pg.name+strconv.Itoa(width)), width, 900)
			p.Navigate("file://" + file)
			var problems []string
			p.Eval(chartLayoutCheck, &problems)
			var marks int
			p.Eval(`document.querySelectorAll('svg.chart text.mark').length`, &marks)
			if marks == 0 {
				t.Errorf("%s at %d px: no threshold label to check", pg.name, width)
			}
			for _, pr := range problems {
				t.Errorf("%s at %d px: %s", pg.name, width, pr)
			}
		}
	}
}

// chartLayoutCheck lists, in the page, every threshold label that sticks
// out of its chart or the window, or overlaps its chart's legend.
const chartLayoutCheck = `(() => {
  const out = [];
  const inside = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const view = {left: 0, top: -1e9, right: document.documentElement.clientWidth, bottom: 1e9};
  for (const svg of document.querySelectorAll('svg.chart')) {
    const box = svg.getBoundingClientRect();
    const legend = svg.querySelector('.legend');
    if (svg.querySelector('text.mark') && !legend) out.push(svg.getAttribute('aria-labelledby') + ': no legend (class "legend") to check the labels against');
    for (const m of svg.querySelectorAll('text.mark')) {
      const r = m.getBoundingClientRect();
      const name = svg.getAttribute('aria-labelledby').split(' ')[0] + ' label "' + m.textContent + '"';
      if (!inside(r, box)) out.push(name + ' sticks out of its chart: ' + JSON.stringify(r) + ' in ' + JSON.stringify(box));
      if (!inside(r, view)) out.push(name + ' sticks out of the window');
      if (legend) {
        for (const item of legend.querySelectorAll('text, line, rect')) {
          if (overlap(r, item.getBoundingClientRect())) { out.push(name + ' is under the legend ("' + (item.textContent || item.tagName) + '")'); break; }
        }
      }
    }
  }
  return out;
})()`

// TestNoUserAgents: a log without User-Agents (common format) cannot tell
// browsers apart; the tables and the page say so rather than count none.
func TestNoUserAgents(t *testing.T) {
	b := baseline.New(nil)
	if _, err := logs.ReadFiles([]string{excerpt}, logs.ReadOptions{Format: logs.Common}, func(r *logs.Record) { b.Add(r) }); err != nil {
		t.Fatal(err)
	}
	br := b.Result(baseline.ResultOptions{Top: 5, Namer: baseline.Namer{Key: []byte("golden")}})
	set, err := replay.AdHocRules([]string{"5/1m"}, "fixed_window")
	if err != nil {
		t.Fatal(err)
	}
	rp := replay.New(replay.Options{Rules: set, LogOnly: true})
	if _, err := rp.ReadFiles(context.Background(), []string{excerpt}, logs.ReadOptions{Format: logs.Common}); err != nil {
		t.Fatal(err)
	}
	rr := rp.Result()
	if len(br.Suggestions) == 0 || rr.Rules[0].WouldBlockClients == 0 {
		t.Fatalf("nothing would be blocked: suggestions %+v, rules %+v", br.Suggestions, rr.Rules)
	}
	columns := regexp.MustCompile(`\S+(?: \S+)*`)
	rows := func(table, first string) [][]string {
		var out [][]string
		for line := range strings.Lines(table) {
			if strings.HasPrefix(line, first) {
				out = append(out, columns.FindAllString(line, -1))
			}
		}
		return out
	}
	var text bytes.Buffer
	BaselineTable(&text, br, false)
	suggested := rows(text.String(), strconv.FormatInt(br.Suggestions[0].Threshold, 10)+"/")
	if len(suggested) == 0 {
		t.Fatalf("no suggestion row in\n%s", text.String())
	}
	for _, row := range suggested {
		if len(row) < 4 || row[3] != "-" {
			t.Errorf("suggestion row %q: browser clients want -", row)
		}
	}
	text.Reset()
	ReplayTable(&text, rr)
	for _, row := range rows(text.String(), "limit-5-per-1m") {
		if len(row) < 7 || row[6] != "-" {
			t.Errorf("rule row %q: browser clients want -", row)
		}
	}
	var page bytes.Buffer
	if err := ReplayHTML(&page, rr); err != nil {
		t.Fatal(err)
	}
	if s := page.String(); strings.Contains(s, "of them browsers") || !strings.Contains(s, "does not tell browsers apart") {
		t.Errorf("the replay page counts browsers in a log without User-Agents")
	}
	page.Reset()
	if err := BaselineHTML(&page, br); err != nil {
		t.Fatal(err)
	}
	if s := page.String(); !strings.Contains(s, "does not tell browsers apart") {
		t.Errorf("the baseline page does not say the log cannot tell browsers apart")
	}
}
