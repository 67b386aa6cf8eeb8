package report

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/replay"
	"github.com/floodgate/floodgate/ratelimit"
)

// The page: one file, inline CSS and SVG, no script, and a
// Content-Security-Policy that forbids fetching anything, so what a
// browser shows needs no network. Every chart is a figure with a title,
// a description and a caption, followed by its numbers in a table.

type page struct {
	Title    string
	Summary  []string
	Files    []string
	Sections []section
}

type section struct {
	ID, Heading, Intro string
	Tables             []table
	Figures            []figure
}

type figure struct {
	ID, Heading, Caption string
	SVG                  template.HTML
	Tables               []table
	Numbers              *table // in a disclosure
}

type table struct {
	Caption string
	Head    []string
	Rows    [][]string
	Num     []bool // right-aligned columns
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{{.Title}}</title>
<style>
body { font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222; background: #fff; margin: 0; }
main { max-width: 62rem; margin: 0 auto; padding: 1rem 1.5rem 3rem; }
h1 { font-size: 1.6rem; margin: 1rem 0 .5rem; }
h2 { font-size: 1.3rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin: 1.5rem 0 .3rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .3rem 0; }
th, td { border: 1px solid #bbb; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.n { text-align: right; }
figure { margin: 1rem 0; }
figcaption { font-size: .95rem; color: #333; margin-top: .3rem; }
svg.chart { width: 100%; height: auto; max-width: 760px; display: block; background: #fff; }
svg .tick { font-size: 12px; fill: #222; }
svg .axis { font-size: 13px; fill: #222; }
svg .mark { font-size: 12px; fill: #00573f; font-weight: 600; }
details { margin: .3rem 0 1rem; }
summary { cursor: pointer; color: #0055a0; }
.legend span { display: inline-block; margin-right: 1.2rem; }
.swatch { display: inline-block; width: 1.6rem; height: .25rem; vertical-align: middle; margin-right: .3rem; }
</style>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{range .Summary}}<p>{{.}}</p>
{{end}}{{if .Files}}<ul>{{range .Files}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{range .Sections}}<section aria-labelledby="{{.ID}}">
<h2 id="{{.ID}}">{{.Heading}}</h2>
{{if .Intro}}<p>{{.Intro}}</p>
{{end}}{{range .Tables}}{{template "table" .}}{{end}}{{range .Figures}}<h3 id="{{.ID}}-h">{{.Heading}}</h3>
<figure aria-labelledby="{{.ID}}-c">
{{.SVG}}
<figcaption id="{{.ID}}-c">{{.Caption}}</figcaption>
</figure>
{{range .Tables}}{{template "table" .}}{{end}}{{with .Numbers}}<details><summary>The numbers behind the chart</summary>
{{template "table" .}}</details>
{{end}}{{end}}</section>
{{end}}</main>
</body>
</html>
{{define "table"}}<table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range .Head}}<th scope="col">{{.}}</th>{{end}}</tr></thead>
<tbody>
{{$num := .Num}}{{range .Rows}}<tr>{{range $i, $c := .}}{{if index $num $i}}<td class="n">{{$c}}</td>{{else}}<td>{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
{{end}}`))

func (p *page) write(w io.Writer) error { return pageTmpl.Execute(w, p) }

func i64(n int64) string { return num(n) }
func itoa(n int) string  { return num(int64(n)) }

func summaryLines(lines, parsed, unparsed, requests int64, clients int, from, to string) []string {
	s := []string{fmt.Sprintf("%s lines read: %s parsed, %s not parsed (skipped). %s %s from %s %s.",
		i64(lines), i64(parsed), i64(unparsed), i64(requests), plural(requests, "request"), itoa(clients), plural(int64(clients), "client"))}
	if from != "" {
		s = append(s, fmt.Sprintf("First request %s, last %s (UTC).", from, to))
	}
	return s
}

// noUserAgents says why a report counts no browsers.
const noUserAgents = "The log does not tell browsers apart: it records no User-Agent."

// peaksFigure draws the distribution of one window's peaks with marks.
func peaksFigure(id string, w baseline.Window, clients int, marks []marker, what string) figure {
	pts := make([]peakPoint, len(w.Distribution))
	browsers := 0
	for i, b := range w.Distribution {
		pts[i] = peakPoint{peak: b.Peak, clients: b.Clients, browsers: b.BrowserClients}
		browsers += b.BrowserClients
	}
	title := fmt.Sprintf("Clients by their peak requests in one %s window", w.Window)
	desc := fmt.Sprintf("Of %s clients, half peaked at %d requests or fewer in one %s window, 99%% at %d or fewer, and the busiest at %d.",
		itoa(clients), w.PeakP50, w.Window, w.PeakP99, w.PeakMax)
	told := browsersTold([]baseline.Window{w})
	if cp, ok := w.ByClass["browser"]; ok {
		desc += fmt.Sprintf(" The busiest of %s browser clients peaked at %d.", itoa(cp.Clients), cp.PeakMax)
	} else if !told {
		desc += " " + noUserAgents
	}
	for _, m := range marks {
		desc += " " + m.label + " is marked."
	}
	lines := "the dashed vermillion line counts browser clients; "
	if !told {
		lines = ""
	}
	f := figure{
		ID:      id,
		Heading: fmt.Sprintf("Per-client peaks over %s", w.Window),
		SVG:     peaksSVG(id, title, desc, pts, clients, browsers, marks),
		Caption: fmt.Sprintf("%s The solid blue line counts all clients whose peak in one aligned %s window reached the value on the horizontal axis; %sgreen dotted lines mark %s. A limit at a marked value refuses the clients to its right.",
			desc, w.Window, lines, what),
	}
	pt := table{Caption: "Percentiles of per-client peaks, " + w.Window, Head: []string{"clients", "count", "p50", "p90", "p99", "p99.9", "max"},
		Num: []bool{false, true, true, true, true, true, true}}
	pt.Rows = append(pt.Rows, peakCells("all", clients, w.Peaks))
	for _, c := range classOrder {
		if cp, ok := w.ByClass[c]; ok {
			pt.Rows = append(pt.Rows, peakCells(c, cp.Clients, cp.Peaks))
		}
	}
	f.Tables = append(f.Tables, pt)
	nt := &table{Caption: "Clients at each peak, " + w.Window, Head: []string{"peak", "clients", "browser clients"}, Num: []bool{true, true, true}}
	for _, b := range w.Distribution {
		nt.Rows = append(nt.Rows, []string{i64(b.Peak), itoa(b.Clients), browserCount(b.BrowserClients, told, "—")})
	}
	f.Numbers = nt
	return f
}

func peakCells(name string, clients int, p baseline.Peaks) []string {
	return []string{name, itoa(clients), i64(p.PeakP50), i64(p.PeakP90), i64(p.PeakP99), i64(p.PeakP999), i64(p.PeakMax)}
}

func fileLine(f logs.File) string {
	return fmt.Sprintf("%s: %s format, %s lines, %s not parsed", filepath.Base(f.Name), f.Format, i64(f.Lines), i64(f.Unparsed))
}

// BaselineHTML writes r as a self-contained HTML page.
func BaselineHTML(w io.Writer, r *baseline.Result) error {
	p := &page{Title: "floodgate baseline", Summary: summaryLines(r.Lines, r.Parsed, r.Unparsed, r.Requests, r.Clients, r.From, r.To)}
	for _, f := range r.Files {
		p.Files = append(p.Files, fileLine(f))
	}
	sec := section{ID: "peaks", Heading: "Per-client peaks and suggested thresholds",
		Intro: "A client's peak is its largest number of requests in one window aligned to a multiple of the window length since the Unix epoch. Suggested thresholds are counted as a fixed-window limit would count them: in every window, the requests of a client past the threshold."}
	told := browsersTold(r.Windows)
	for i, win := range r.Windows {
		var marks []marker
		st := table{Caption: "Suggested thresholds over " + win.Window + " and what each would have blocked",
			Head: []string{"limit", "requests", "clients", "browser clients", "basis"}, Num: []bool{false, true, true, true, false}}
		for _, s := range r.Suggestions {
			if s.Window != win.Window {
				continue
			}
			marks = append(marks, marker{at: s.Threshold, label: fmt.Sprintf("%d/%s", s.Threshold, s.Window)})
			st.Rows = append(st.Rows, []string{fmt.Sprintf("%d/%s", s.Threshold, s.Window), i64(s.WouldBlockRequests),
				itoa(s.WouldBlockClients), browserCount(s.WouldBlockBrowserClients, told, "—"), s.Basis})
		}
		f := peaksFigure("peaks-"+strconv.Itoa(i), win, r.Clients, marks, "the suggested thresholds")
		if len(st.Rows) > 0 {
			f.Tables = append(f.Tables, st)
		}
		sec.Figures = append(sec.Figures, f)
	}
	p.Sections = append(p.Sections, sec)
	if len(r.TopClients) > 0 {
		tt := table{Caption: "The busiest clients", Head: []string{"client", "class", "requests"}, Num: []bool{false, false, true}}
		for _, win := range r.Windows {
			tt.Head = append(tt.Head, "peak "+win.Window)
			tt.Num = append(tt.Num, true)
		}
		for _, c := range r.TopClients {
			row := []string{c.Client, c.Class, i64(c.Requests)}
			for _, win := range r.Windows {
				row = append(row, i64(c.Peaks[win.Window]))
			}
			tt.Rows = append(tt.Rows, row)
		}
		p.Sections = append(p.Sections, section{ID: "top", Heading: "Top clients", Tables: []table{tt}})
	}
	return p.write(w)
}

// ReplayHTML writes r as a self-contained HTML page.
func ReplayHTML(w io.Writer, r *replay.Result) error {
	p := &page{Title: "floodgate replay", Summary: summaryLines(r.Lines, r.Parsed, r.Unparsed, r.Requests, r.Clients, r.From, r.To)}
	p.Summary = append(p.Summary, fmt.Sprintf("Replayed in %s mode through floodgate's rule engine and in-memory store, with the log's timestamps as the clock.", r.Mode))
	if r.Unrouted > 0 {
		p.Summary = append(p.Summary, fmt.Sprintf("%s requests matched no route, or were not HTTP, and met no rule.", i64(r.Unrouted)))
	}
	if o := OrderLines(r.Order); len(o) > 0 {
		for _, line := range o {
			p.Summary = append(p.Summary, strings.ToUpper(line[:1])+line[1:]+".")
		}
	} else if r.Requests > 0 {
		p.Summary = append(p.Summary, "Every request was replayed at its own time, in time order.")
	}
	if r.StoreEvictions > 0 {
		p.Summary = append(p.Summary, fmt.Sprintf("Warning: the store evicted %s counters to stay within its key cap, so the counts are low.", i64(int64(r.StoreEvictions))))
	}
	for _, rule := range r.Rules {
		if rule.NotReplayed != "" {
			p.Summary = append(p.Summary, fmt.Sprintf("%s: not replayed: %s.", rule.Name, rule.NotReplayed))
		}
		if rule.Caveat != "" {
			p.Summary = append(p.Summary, fmt.Sprintf("%s: %s.", rule.Name, rule.Caveat))
		}
	}
	for _, f := range r.Files {
		p.Files = append(p.Files, fileLine(f))
	}
	rt := table{Caption: "What each rule would have refused",
		Head: []string{"rule", "action", "limit", "algorithm", "matched", "would block", "clients", "browser clients"},
		Num:  []bool{false, false, false, false, true, true, true, true}}
	told := browsersTold(r.Windows)
	for _, rule := range r.Rules {
		limit, alg := rule.Limit, rule.Algorithm
		if limit == "" {
			limit, alg = "—", "—"
		}
		if rule.NotReplayed != "" {
			rt.Rows = append(rt.Rows, []string{rule.Name, rule.Action, limit, alg, "not replayed", "—", "—", "—"})
			continue
		}
		rt.Rows = append(rt.Rows, []string{rule.Name, rule.Action, limit, alg, i64(rule.Matched), i64(rule.WouldBlockRequests),
			itoa(rule.WouldBlockClients), browserCount(rule.WouldBlockBrowserClients, told, "—")})
		for _, c := range rule.Candidates {
			rt.Rows = append(rt.Rows, []string{rule.Name + " (candidate)", "count", c.Limit, alg, "", i64(c.WouldBlockRequests),
				itoa(c.WouldBlockClients), browserCount(c.WouldBlockBrowserClients, told, "—")})
		}
	}
	p.Sections = append(p.Sections, section{ID: "rules", Heading: "Rules", Tables: []table{rt}})

	// Would-blocks over time, one chart per rule, over the same hours.
	first, last := int64(0), int64(-1)
	if from, err := time.Parse(time.RFC3339, r.From); err == nil {
		to, _ := time.Parse(time.RFC3339, r.To)
		first, last = from.Unix()/3600, to.Unix()/3600
	}
	ts := section{ID: "timeline", Heading: "Would-blocks over time",
		Intro: "Requests each rule refused or would have refused, per hour (UTC)."}
	for i, rule := range r.Rules {
		if rule.NotReplayed != "" {
			continue // said in the summary; no chart of zeros
		}
		values := map[int64]int64{}
		nt := &table{Caption: "Per hour: " + rule.Name, Head: []string{"hour (UTC)", "matched", "would block", "clients", "browser clients"},
			Num: []bool{false, true, true, true, true}}
		busiest, most := "", int64(0)
		for _, h := range rule.Timeline {
			t, err := time.Parse(time.RFC3339, h.Hour)
			if err != nil {
				continue
			}
			values[t.Unix()/3600] = h.WouldBlockRequests
			nt.Rows = append(nt.Rows, []string{h.Hour, i64(h.Matched), i64(h.WouldBlockRequests), itoa(h.WouldBlockClients), browserCount(h.WouldBlockBrowserClients, told, "—")})
			if h.WouldBlockRequests > most {
				busiest, most = h.Hour, h.WouldBlockRequests
			}
		}
		label := rule.Name
		if rule.Limit != "" {
			label += " (" + rule.Limit + ")"
		}
		desc := fmt.Sprintf("%s would have refused %s of %s matched requests, from %s clients (%s of them browsers).",
			label, i64(rule.WouldBlockRequests), i64(rule.Matched), itoa(rule.WouldBlockClients), itoa(rule.WouldBlockBrowserClients))
		if !told {
			desc = fmt.Sprintf("%s would have refused %s of %s matched requests, from %s clients. %s",
				label, i64(rule.WouldBlockRequests), i64(rule.Matched), itoa(rule.WouldBlockClients), noUserAgents)
		}
		if most > 0 {
			desc += fmt.Sprintf(" The busiest hour was %s with %s.", busiest, i64(most))
		} else {
			desc += " No hour had any."
		}
		id := "timeline-" + strconv.Itoa(i)
		ts.Figures = append(ts.Figures, figure{
			ID: id, Heading: label,
			SVG:     timelineSVG(id, "Would-block requests per hour: "+label, desc, first, last, values),
			Caption: desc + " Each bar is one hour.",
			Numbers: nt,
		})
	}
	p.Sections = append(p.Sections, ts)

	// Peaks, with the rules' limits marked on their window.
	ps := section{ID: "peaks", Heading: "Per-client peaks and the rules' limits",
		Intro: "A client's peak is its largest number of requests in one window aligned to a multiple of the window length since the Unix epoch. Each rule's limits are marked on the chart of their window."}
	for i, win := range r.Windows {
		d, err := ratelimit.ParseWindow(win.Window)
		if err != nil {
			continue
		}
		var marks []marker
		for _, rule := range r.Rules {
			for _, l := range rule.Limits {
				if l.Window == d {
					marks = append(marks, marker{at: l.Count, label: fmt.Sprintf("%s: %s", rule.Name, l)})
				}
			}
			for _, c := range rule.Candidates {
				if cl, err := ratelimit.ParseLimit(c.Limit); err == nil && cl.Window == d {
					marks = append(marks, marker{at: cl.Count, label: fmt.Sprintf("%s candidate: %s", rule.Name, c.Limit)})
				}
			}
		}
		ps.Figures = append(ps.Figures, peaksFigure("peaks-"+strconv.Itoa(i), win, r.Clients, marks, "the rules' limits"))
	}
	if len(ps.Figures) > 0 {
		p.Sections = append(p.Sections, ps)
	}
	return p.write(w)
}
