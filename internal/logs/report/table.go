// Package report renders the results of the tuning tools: a
// readable table for a terminal, and a self-contained HTML page with
// charts (inline SVG, no script, nothing fetched: it opens without
// network). JSON output is the results' own encoding.
package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/query"
	"github.com/floodgate/floodgate/internal/logs/replay"
	"github.com/floodgate/floodgate/internal/uaclass"
)

// classOrder is the order classes are listed in.
var classOrder = []string{uaclass.Browser.String(), uaclass.Script.String(), uaclass.Crawler.String(), uaclass.Unknown.String()}

func newTab(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// browsersTold reports whether the log tells browsers apart: some client
// has a class other than unknown, which only a log without User-Agents
// (common format) leaves every client in.
func browsersTold(ws []baseline.Window) bool {
	for _, w := range ws {
		for c := range w.ByClass {
			if c != uaclass.Unknown.String() {
				return true
			}
		}
	}
	return len(ws) == 0
}

// browserCount is n, or dash when the log does not tell browsers apart:
// a count of 0 would say that no browser was among them.
func browserCount(n int, told bool, dash string) string {
	if !told {
		return dash
	}
	return num(int64(n))
}

// header writes the summary line and one line per file.
func header(w io.Writer, title string, c logs.Counts, requests int64, clients int, from, to string, files []logs.File) {
	printf(w, "%s: %s lines, %s parsed, %s unparsed; %s %s from %s %s",
		title, num(c.Lines), num(c.Parsed), num(c.Unparsed), num(requests), plural(requests, "request"), num(int64(clients)), plural(int64(clients), "client"))
	if from != "" {
		printf(w, ", %s to %s", from, to)
	}
	fmt.Fprintln(w)
	for _, f := range files {
		printf(w, "  %s: %s, %s lines, %s unparsed", filepath.Base(f.Name), f.Format, num(f.Lines), num(f.Unparsed))
		if f.FirstUnparsedLine > 0 {
			printf(w, " (first: line %d)", f.FirstUnparsedLine)
		}
		fmt.Fprintln(w)
	}
}

// plural is noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// num formats n with thin groups of three digits: 1,234,567.
func num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func peakRow(tw io.Writer, window, class string, clients int, p baseline.Peaks) {
	printf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\n", window, class, num(int64(clients)),
		p.PeakP50, p.PeakP90, p.PeakP99, p.PeakP999, p.PeakMax)
}

func peaksTable(w io.Writer, windows []baseline.Window, clients int) {
	fmt.Fprintln(w, "\nPeak requests per client in one aligned window")
	tw := newTab(w)
	fmt.Fprintln(tw, "WINDOW\tCLASS\tCLIENTS\tP50\tP90\tP99\tP99.9\tMAX")
	for _, win := range windows {
		peakRow(tw, win.Window, "all", clients, win.Peaks)
		for _, c := range classOrder {
			if cp, ok := win.ByClass[c]; ok {
				peakRow(tw, win.Window, c, cp.Clients, cp.Peaks)
			}
		}
	}
	tw.Flush()
}

func topTable(w io.Writer, top []baseline.TopClient, windows []baseline.Window, shown bool) {
	if len(top) == 0 {
		return
	}
	how := "hashed; --show-clients shows them as logged"
	if shown {
		how = "as logged"
	}
	printf(w, "\nTop clients (%s)\n", how)
	tw := newTab(w)
	fmt.Fprint(tw, "CLIENT\tCLASS\tREQUESTS")
	for _, win := range windows {
		printf(tw, "\tPEAK %s", win.Window)
	}
	fmt.Fprintln(tw)
	for _, c := range top {
		printf(tw, "%s\t%s\t%s", c.Client, c.Class, num(c.Requests))
		for _, win := range windows {
			printf(tw, "\t%d", c.Peaks[win.Window])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// BaselineTable writes r as tables. shown says whether clients are shown
// as logged rather than hashed.
func BaselineTable(w io.Writer, r *baseline.Result, shown bool) {
	header(w, "floodgate baseline", logs.Counts{Lines: r.Lines, Parsed: r.Parsed, Unparsed: r.Unparsed},
		r.Requests, r.Clients, r.From, r.To, r.Files)
	if r.Requests == 0 {
		fmt.Fprintln(w, "\nNo requests to measure.")
		return
	}
	peaksTable(w, r.Windows, r.Clients)
	topTable(w, r.TopClients, r.Windows, shown)
	if len(r.Suggestions) > 0 {
		fmt.Fprintln(w, "\nSuggested thresholds, with what each would have blocked (fixed aligned windows)")
		tw := newTab(w)
		fmt.Fprintln(tw, "LIMIT\tREQUESTS\tCLIENTS\tBROWSER CLIENTS\tBASIS")
		told := browsersTold(r.Windows)
		for _, s := range r.Suggestions {
			printf(tw, "%d/%s\t%s\t%s\t%s\t%s\n", s.Threshold, s.Window, num(s.WouldBlockRequests),
				num(int64(s.WouldBlockClients)), browserCount(s.WouldBlockBrowserClients, told, "-"), s.Basis)
		}
		tw.Flush()
		fmt.Fprintln(w, "\nTry them on the real engine: floodgate replay --limit N/WINDOW … LOG…")
	}
}

// ReplayTable writes r as tables.
func ReplayTable(w io.Writer, r *replay.Result) {
	header(w, "floodgate replay ("+r.Mode+")", logs.Counts{Lines: r.Lines, Parsed: r.Parsed, Unparsed: r.Unparsed},
		r.Requests, r.Clients, r.From, r.To, r.Files)
	if r.Unrouted > 0 {
		printf(w, "  %s requests matched no route or were not HTTP (the gateway answers them 404 or 400 before any rule)\n", num(r.Unrouted))
	}
	for _, line := range OrderLines(r.Order) {
		printf(w, "  %s\n", line)
	}
	if r.StoreEvictions > 0 {
		printf(w, "  warning: the store evicted %s counters to stay within its key cap: counts are low; raise store.max_keys\n", num(int64(r.StoreEvictions)))
	}
	fmt.Fprintln(w, "\nWhat each rule would have refused")
	tw := newTab(w)
	fmt.Fprintln(tw, "RULE\tACTION\tLIMIT\tMATCHED\tWOULD BLOCK\tCLIENTS\tBROWSER CLIENTS\tBUSIEST HOUR")
	told := browsersTold(r.Windows)
	for _, rule := range r.Rules {
		limit := rule.Limit
		if limit == "" {
			limit = "-"
		} else if rule.Algorithm != "" {
			limit += " " + rule.Algorithm
		}
		busiest := "-"
		var most int64
		for _, h := range rule.Timeline {
			if h.WouldBlockRequests > most {
				most = h.WouldBlockRequests
				busiest = fmt.Sprintf("%s (%s)", strings.TrimSuffix(h.Hour, ":00:00Z")+"h", num(most))
			}
		}
		if rule.NotReplayed != "" {
			// No 0s, which would read as "refused nothing".
			printf(tw, "%s\t%s\t%s\tnot replayed\t-\t-\t-\t-\n", rule.Name, rule.Action, limit)
			continue
		}
		printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rule.Name, rule.Action, limit, num(rule.Matched),
			num(rule.WouldBlockRequests), num(int64(rule.WouldBlockClients)), browserCount(rule.WouldBlockBrowserClients, told, "-"), busiest)
		for _, c := range rule.Candidates {
			printf(tw, "  candidate\t\t%s\t\t%s\t%s\t%s\t\n", c.Limit, num(c.WouldBlockRequests),
				num(int64(c.WouldBlockClients)), browserCount(c.WouldBlockBrowserClients, told, "-"))
		}
	}
	tw.Flush()
	for _, rule := range r.Rules {
		if rule.NotReplayed != "" {
			printf(w, "  %s: not replayed: %s\n", rule.Name, rule.NotReplayed)
			continue
		}
		if rule.Caveat != "" {
			printf(w, "  %s: %s\n", rule.Name, rule.Caveat)
		}
		if rule.Errors > 0 {
			printf(w, "  %s: %s evaluations failed (the rule was skipped for them, as the gateway does)\n", rule.Name, num(rule.Errors))
		}
		switch {
		case rule.Unmeasured:
			printf(w, "  %s: its cost, %s, cannot be replayed from this log: no request in it records how long the upstream took (ALB and floodgate logs do, common and combined logs do not)\n", rule.Name, rule.Cost)
		case rule.Cost != "":
			printf(w, "  %s: charged %g in %s\n", rule.Name, rule.Charged, rule.Cost)
		}
	}
	if r.Requests > 0 && len(r.Windows) > 0 {
		peaksTable(w, r.Windows, r.Clients)
	}
}

// OrderLines says, in sentences, how far from time order the requests
// reached the engine; nothing when they came in order.
func OrderLines(o replay.Order) []string {
	var out []string
	if o.LeftOut > 0 {
		out = append(out, fmt.Sprintf("%s %s left out: dated up to %s after the record that followed %s in %s file, and more than %s after every record before %s (a wrong clock or a corrupt line)",
			num(o.LeftOut), plural(o.LeftOut, "record"), seconds(o.LeftOutMaxAheadSeconds), pick(o.LeftOut, "it", "them"),
			pick(o.LeftOut, "its", "their"), seconds(replay.FarAhead.Seconds()), pick(o.LeftOut, "it", "them")))
	}
	if o.Late > 0 {
		why := ""
		if reasons := lateReasons(o.LateReasons); len(reasons) > 0 {
			why = " (" + strings.Join(reasons, "; ") + ")"
		}
		out = append(out, fmt.Sprintf("%s %s out of time order, up to %s older than one replayed before%s: replayed at that later time, so the counts are approximate",
			num(o.Late), plural(o.Late, "request"), seconds(o.LateMaxSeconds), why))
	}
	return out
}

// lateReasons says why requests were late, a phrase for each reason.
func lateReasons(l replay.LateReasons) []string {
	var out []string
	if n := l.Span; n > 0 {
		out = append(out, fmt.Sprintf("%s logged more than %s after later ones in %s", num(n),
			seconds(replay.ReorderSpan.Seconds()), pick(n, "its file", "their files")))
	}
	if n := l.Memory; n > 0 {
		out = append(out, fmt.Sprintf("%s further back than the %d MiB the open files hold together could reach", num(n), replay.ExtraBytes>>20))
	}
	if n := l.OpenFiles; n > 0 {
		out = append(out, fmt.Sprintf("%s in %s that waited while %d others were open", num(n), pick(n, "a file", "files"), replay.MaxOpen))
	}
	return out
}

func pick(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// seconds writes a span of time: "59s", "2h3m0s", "7,305 days".
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case s >= 2*24*3600:
		return num(int64(s/(24*3600))) + " days"
	case s == 24*3600:
		return "a day"
	case d < time.Second:
		return d.String()
	}
	return d.Round(time.Second).String()
}

// LimitedClientsTable writes r as a table. shown says whether clients
// are shown as logged rather than hashed.
func LimitedClientsTable(w io.Writer, r *query.LimitedClientsResult, shown bool) {
	querySummary(w, &r.Summary)
	how := "hashed; --show-clients shows them as logged"
	if shown {
		how = "as logged"
	}
	count := num(int64(r.Limited))
	if len(r.Clients) < r.Limited {
		count += ", the first " + num(int64(len(r.Clients))) + " listed"
	}
	printf(w, "\nClients refused by a rule, or that would have been: %s (%s)\n", count, how)
	tw := newTab(w)
	fmt.Fprintln(tw, "CLIENT\tCLASS\tREQUESTS\tBLOCKED\tWOULD BLOCK\tRULES\tFIRST\tLAST")
	for _, c := range r.Clients {
		printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Client, c.Class, num(c.Requests), num(c.Blocked),
			num(c.WouldBlock), strings.Join(c.Rules, ","), c.First, c.Last)
	}
	tw.Flush()
}

// BrowsersCaughtTable writes r as a table.
func BrowsersCaughtTable(w io.Writer, r *query.BrowsersCaughtResult) {
	querySummary(w, &r.Summary)
	if r.BrowserRequests != nil {
		printf(w, "\nBrowser requests caught by a rule (of %s browser requests)\n", num(*r.BrowserRequests))
	} else {
		printf(w, "\nBrowser requests caught by a rule\n")
	}
	tw := newTab(w)
	fmt.Fprintln(tw, "RULE\tREQUESTS\tBLOCKED\tWOULD BLOCK\tCLIENTS\tTOP PATHS")
	for _, c := range r.Rules {
		paths := make([]string, len(c.TopPaths))
		for i, p := range c.TopPaths {
			paths[i] = fmt.Sprintf("%s (%s)", p.Path, num(p.Requests))
		}
		printf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Rule, num(c.Requests), num(c.Blocked), num(c.WouldBlock),
			num(int64(c.Clients)), strings.Join(paths, ", "))
	}
	tw.Flush()
}

// PeakRateTable writes r as tables.
func PeakRateTable(w io.Writer, r *query.PeakRateResult, shown bool) {
	querySummary(w, &r.Summary)
	if r.Clients == 0 {
		return
	}
	peaksTable(w, r.Windows, r.Clients)
	topTable(w, r.TopClients, r.Windows, shown)
}

func querySummary(w io.Writer, s *query.Summary) {
	printf(w, "floodgate logs %s: %s lines, %s parsed, %s unparsed; %s access records, %s decision records\n",
		s.Query, num(s.Lines), num(s.Parsed), num(s.Unparsed), num(s.Requests), num(s.Decisions))
	for _, f := range s.Files {
		printf(w, "  %s: %s, %s lines, %s unparsed\n", filepath.Base(f.Name), f.Format, num(f.Lines), num(f.Unparsed))
	}
	for _, n := range slices.Clone(s.Notes) {
		printf(w, "  note: %s\n", n)
	}
}
