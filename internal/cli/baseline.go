package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/report"
)

const baselineSynopsis = "[--json] [--html FILE] [--windows 1m,5m] [--top N] [--show-clients] [--format NAME] LOG…"

func init() {
	register("baseline", 50, baselineSynopsis, runBaseline)
}

// runBaseline measures per-client peak rates in logs and suggests
// thresholds (T2).
func runBaseline(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "baseline", baselineSynopsis)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	htmlFile := fs.String("html", "", "also write a self-contained HTML report with charts to `file`")
	windows := fs.String("windows", "1m,5m", "window `lengths` to measure peaks over, comma-separated")
	top := fs.Int("top", 10, "list at most the `N` busiest clients (0: none)")
	show := fs.Bool("show-clients", false, "show clients as logged instead of as keyed hashes")
	lf := addLogFlags(fs)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{errors.New("want one or more LOG files (- for standard input)")}
	}
	ws, err := parseWindows(*windows)
	if err != nil {
		return usageError{fmt.Errorf("--windows: %w", err)}
	}
	if *top < 0 {
		return usageError{errors.New("--top: want 0 or more")}
	}
	names, err := namer(env, *show)
	if err != nil {
		return err
	}
	html, err := openHTML(*htmlFile)
	if err != nil {
		return err
	}
	defer html.abandon()
	b := baseline.New(ws)
	read, counts, err := readLogs(env, files, lf, func(r *logs.Record) { b.Add(r) })
	if err != nil {
		return err
	}
	if n := b.Decisions(); n > 0 {
		fmt.Fprintf(env.stderr, "floodgate baseline: %d decision-log records skipped: they are not requests (read the access log)\n", n)
	}
	n := *top
	if n == 0 {
		n = -1
	}
	res := b.Result(baseline.ResultOptions{Top: n, Namer: names})
	res.Lines, res.Parsed, res.Unparsed, res.Files = counts.Lines, counts.Parsed, counts.Unparsed, read
	if html != nil {
		if err := html.write(env, func(w io.Writer) error { return report.BaselineHTML(w, res) }); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(env.stdout, res)
	}
	report.BaselineTable(env.stdout, res, *show)
	return nil
}
