package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/query"
	"github.com/floodgate/floodgate/internal/logs/report"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/ratelimit"
)

const logsSynopsis = "limited-clients|browsers-caught|peak-rate [--json] [--top N] [--windows 1m,5m] [--show-clients] [--format NAME] LOG…"

func init() {
	register("logs", 60, logsSynopsis, runLogs)
}

// hashKeyVar names the environment variable whose value keys the hashes
// that stand for clients in reports and in the gateway's logs, so that
// they stay the same from one run to the next and across replicas;
// without it each process draws a key.
const hashKeyVar = "FLOODGATE_LOG_HASH_KEY"

// minHashKey is the least length of the gateway's hash key: the hashes
// stand for addresses, few enough to try every one against a known or
// guessed key, so the key is a secret as the admin token is.
const minHashKey = 16

// gatewayHasher returns the hasher of the gateway's logs: keyed by
// FLOODGATE_LOG_HASH_KEY when it is set, so that one client has one hash
// in every replica's log and across restarts (floodgate replay and logs
// count it once), and by a random key otherwise (nil: the gateway draws
// one).
func gatewayHasher(env environ) (*telemetry.KeyHasher, error) {
	key, err := hashKey(env)
	if key == "" || err != nil {
		return nil, err
	}
	return telemetry.NewKeyHasher(key), nil
}

// hashKey returns FLOODGATE_LOG_HASH_KEY, "" when it is unset or empty,
// or an error when it is too short to keep the hashes from being
// reversed.
func hashKey(env environ) (string, error) {
	key, ok := env.lookup(hashKeyVar)
	if !ok || key == "" {
		return "", nil
	}
	if len(key) < minHashKey {
		return "", fmt.Errorf("%s is %d bytes; a key of at least %d keeps the hashes from being reversed (openssl rand -hex 16 makes one)", hashKeyVar, len(key), minHashKey)
	}
	return key, nil
}

// runLogs runs one of the saved queries over floodgate's own logs (M9).
func runLogs(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "logs", logsSynopsis)
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	top := fs.Int("top", 20, "list at most `N` clients (limited-clients, peak-rate; 0: none)")
	windows := fs.String("windows", "1m,5m", "peak-rate: window `lengths`, comma-separated")
	show := fs.Bool("show-clients", false, "show clients as logged instead of as keyed hashes (every query that lists clients: limited-clients, peak-rate)")
	lf := addLogFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{errors.New("want a query: limited-clients, browsers-caught or peak-rate")}
	}
	q, files := pos[0], pos[1:]
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
	var add func(*logs.Record)
	var finish func(logs.Counts, []logs.File) (any, func(io.Writer))
	switch q {
	case "limited-clients":
		lc := query.NewLimitedClients()
		add = lc.Add
		finish = func(c logs.Counts, f []logs.File) (any, func(io.Writer)) {
			r := lc.Result(*top, names)
			fillSummary(&r.Summary, c, f)
			return r, func(w io.Writer) { report.LimitedClientsTable(w, r, *show) }
		}
	case "browsers-caught":
		bc := query.NewBrowsersCaught()
		add = bc.Add
		finish = func(c logs.Counts, f []logs.File) (any, func(io.Writer)) {
			r := bc.Result()
			fillSummary(&r.Summary, c, f)
			return r, func(w io.Writer) { report.BrowsersCaughtTable(w, r) }
		}
	case "peak-rate":
		pr := query.NewPeakRate(ws)
		add = pr.Add
		finish = func(c logs.Counts, f []logs.File) (any, func(io.Writer)) {
			r := pr.Result(*top, names)
			fillSummary(&r.Summary, c, f)
			return r, func(w io.Writer) { report.PeakRateTable(w, r, *show) }
		}
	default:
		return usageError{fmt.Errorf("unknown query %q (allowed: limited-clients, browsers-caught, peak-rate)", q)}
	}
	read, counts, err := readLogs(env, files, lf, add)
	if err != nil {
		return err
	}
	res, table := finish(counts, read)
	if *asJSON {
		return writeJSON(env.stdout, res)
	}
	table(env.stdout)
	return nil
}

func fillSummary(s *query.Summary, c logs.Counts, files []logs.File) {
	s.Lines, s.Parsed, s.Unparsed, s.Files = c.Lines, c.Parsed, c.Unparsed, files
}

// logFlags are the flags every log-reading command has.
type logFlags struct {
	format *string
}

func addLogFlags(fs *flag.FlagSet) logFlags {
	return logFlags{format: fs.String("format", "auto", "log `format`: "+strings.Join(logs.FormatNames(), ", ")+" (auto detects each file's)")}
}

// readLogs reads the named logs ("-" is standard input), calling fn for
// every record, with a progress bar on a terminal for large inputs. It
// warns about files it could not make sense of and fails when no line of
// any file parsed.
func readLogs(env environ, names []string, lf logFlags, fn func(*logs.Record)) ([]logs.File, logs.Counts, error) {
	return readLogsWith(env, names, lf, func(names []string, o logs.ReadOptions) ([]logs.File, error) {
		return logs.ReadFiles(names, o, fn)
	})
}

// readLogsWith is readLogs with the reading done by read: logs.ReadFiles,
// or replay's reading in time order.
func readLogsWith(env environ, names []string, lf logFlags, read func([]string, logs.ReadOptions) ([]logs.File, error)) ([]logs.File, logs.Counts, error) {
	f, err := logs.ParseFormat(*lf.format)
	if err != nil {
		return nil, logs.Counts{}, usageError{fmt.Errorf("--format: %w", err)}
	}
	stdinUsed := 0
	for _, n := range names {
		if n == "-" {
			stdinUsed++
		}
	}
	if stdinUsed > 1 {
		return nil, logs.Counts{}, usageError{errors.New("standard input (-) can be read only once")}
	}
	pb := newProgress(env.stderr)
	files, err := read(names, logs.ReadOptions{Format: f, Stdin: os.Stdin, Progress: pb.update})
	pb.done()
	if err != nil {
		return files, logs.Counts{}, err
	}
	total := logs.Total(files)
	for _, fi := range files {
		switch {
		case fi.Format == logs.Auto.String() && fi.Lines > 0:
			fmt.Fprintf(env.stderr, "floodgate: %s: no line is in a known format (%s); give --format\n",
				fi.Name, strings.Join(logs.FormatNames()[1:], ", "))
		case fi.Unparsed > 0:
			fmt.Fprintf(env.stderr, "floodgate: %s: %d of %d lines not parsed as %s, skipped (the first is line %d)\n",
				fi.Name, fi.Unparsed, fi.Lines, fi.Format, fi.FirstUnparsedLine)
		}
	}
	if err := logs.NoRecords(files); err != nil {
		return files, total, err
	}
	return files, total, nil
}

// parseWindows parses "1m,5m".
func parseWindows(s string) ([]time.Duration, error) {
	var out []time.Duration
	seen := map[time.Duration]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		d, err := ratelimit.ParseWindow(part)
		if err != nil {
			return nil, err
		}
		if d < time.Second || d > ratelimit.MaxWindow {
			return nil, fmt.Errorf("window %s: want 1s to %s", part, ratelimit.FormatWindow(ratelimit.MaxWindow))
		}
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no window given")
	}
	return out, nil
}

// namer shows clients hashed with the key in FLOODGATE_LOG_HASH_KEY, or
// a random one, unless show. A key too short to keep the hashes from
// being reversed is an error, as for the gateway: reports are made to be
// shared.
func namer(env environ, show bool) (baseline.Namer, error) {
	if show {
		return baseline.Namer{Show: true}, nil
	}
	key, err := hashKey(env)
	if err != nil {
		return baseline.Namer{}, err
	}
	if key == "" {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		key = string(b)
	}
	return baseline.Namer{Key: []byte(key)}, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// htmlOutput is the file of --html, opened before the logs are read, so
// that a path that cannot be written fails at once rather than after
// reading gigabytes. A file that was there keeps its content until the
// report replaces it; one this run created is removed if the run fails.
type htmlOutput struct {
	name    string
	f       *os.File
	created bool
}

// openHTML opens the --html file name; nil for "" (no --html).
func openHTML(name string) (*htmlOutput, error) {
	if name == "" {
		return nil, nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(name, os.O_WRONLY, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("--html: %w", err)
	}
	return &htmlOutput{name: name, f: f, created: created}, nil
}

// write replaces the file's content with the page write writes.
func (h *htmlOutput) write(env environ, write func(io.Writer) error) error {
	if err := h.f.Truncate(0); err != nil {
		h.abandon()
		return fmt.Errorf("--html: write %s: %w", h.name, err)
	}
	if err := write(h.f); err != nil {
		h.abandon()
		return fmt.Errorf("--html: write %s: %w", h.name, err)
	}
	err := h.f.Close()
	h.f = nil
	if err != nil {
		return fmt.Errorf("--html: write %s: %w", h.name, err)
	}
	fmt.Fprintf(env.stderr, "floodgate: wrote %s\n", h.name)
	return nil
}

// abandon closes the file if it is still open, and removes it if this
// run created it: the run failed before its report was written.
func (h *htmlOutput) abandon() {
	if h == nil || h.f == nil {
		return
	}
	h.f.Close()
	h.f = nil
	if h.created {
		os.Remove(h.name)
	}
}

// A progress bar on stderr, shown only when stderr is a terminal and the
// input is large (or of unknown size: standard input).
type progress struct {
	w       io.Writer
	on      bool
	shown   bool
	start   time.Time
	lastTop time.Time
}

// progressMinBytes is the input size from which a progress bar is shown.
const progressMinBytes = 64 << 20

func newProgress(stderr io.Writer) *progress {
	p := &progress{w: stderr, start: time.Now()}
	if f, ok := stderr.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(done, total int64) {
	if !p.on || (total > 0 && total < progressMinBytes) {
		return
	}
	now := time.Now()
	if now.Sub(p.lastTop) < 200*time.Millisecond {
		return
	}
	p.lastTop = now
	p.shown = true
	mib := float64(done) / (1 << 20)
	if total <= 0 {
		fmt.Fprintf(p.w, "\rreading: %.0f MiB", mib)
		return
	}
	const width = 30
	frac := min(float64(done)/float64(total), 1)
	fill := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %.0f/%.0f MiB", strings.Repeat("#", fill), strings.Repeat(" ", width-fill),
		frac*100, mib, float64(total)/(1<<20))
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
