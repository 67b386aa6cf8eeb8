package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/floodgate/floodgate/internal/clientip"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/replay"
	"github.com/floodgate/floodgate/internal/logs/report"
	"github.com/floodgate/floodgate/internal/proxy"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/ratelimit"
)

const replaySynopsis = "[--config FILE [--env NAME]] [--limit N/WINDOW]… [--algorithm NAME] [--mode log-only|enforce|config] [--json] [--html FILE] [--format NAME] LOG…"

func init() {
	register("replay", 55, replaySynopsis, runReplay)
}

// limitFlags collects repeated --limit flags.
type limitFlags []string

// String implements flag.Value.
func (l *limitFlags) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value: each --limit adds one.
func (l *limitFlags) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// runReplay runs recorded traffic through the rule engine (T3).
func runReplay(ctx context.Context, env environ, args []string) error {
	fs := newFlags(env, "replay", replaySynopsis)
	file := fs.String("config", "", "configuration `file` whose rules and routes to replay")
	envName := fs.String("env", "", "environment `name` to apply from the file's environments")
	var limits limitFlags
	fs.Var(&limits, "limit", "add a count rule `N/WINDOW` per client address, named limit-N-per-WINDOW (repeatable)")
	alg := fs.String("algorithm", "", "algorithm of the --limit rules ("+strings.Join(ratelimit.AlgorithmNames(), ", ")+
		"; default sliding_window); with --config, also of every rule of the file")
	mode := fs.String("mode", "log-only", "`mode` to replay in: log-only (every rule sees all its traffic), enforce (a refusal stops evaluation), or config (the file's mode)")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	htmlFile := fs.String("html", "", "also write a self-contained HTML report with charts to `file`")
	lf := addLogFlags(fs)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{errors.New("want one or more LOG files (- for standard input)")}
	}
	if *file == "" && len(limits) == 0 {
		return usageError{errors.New("want --config FILE, one or more --limit N/WINDOW, or both")}
	}
	if *envName != "" && *file == "" {
		return usageError{errors.New("--env needs --config")}
	}
	if *alg != "" {
		if _, err := ratelimit.ParseAlgorithm(*alg); err != nil {
			return usageError{fmt.Errorf("--algorithm: %w", err)}
		}
	}
	switch *mode {
	case "log-only", "enforce":
	case "config":
		if *file == "" {
			return usageError{errors.New("--mode config needs --config")}
		}
	default:
		return usageError{fmt.Errorf("--mode: unknown mode %q (allowed: log-only, enforce, config)", *mode)}
	}

	o := replay.Options{LogOnly: *mode == "log-only"}
	var fileRules *rules.Set
	if *file != "" {
		set, c, err := loadReplayConfig(env, *file, *envName, *alg)
		if err != nil {
			return err
		}
		fileRules = set
		o.Routes = replay.Routes(c)
		o.MaxKeys = c.Store.MaxKeys
		o.InternalRules = c.Internal.EvaluateRules
		if *mode == "config" {
			o.LogOnly = c.Mode == config.ModeLogOnly
		}
		if r, err := clientip.New(clientip.Options{IPv4Prefix: c.ClientIP.IPv4Prefix, IPv6Prefix: c.ClientIP.IPv6Prefix}); err == nil {
			o.Resolver = r
		}
	}
	var adHoc *rules.Set
	if len(limits) > 0 {
		if adHoc, err = replay.AdHocRules(limits, *alg); err != nil {
			return usageError{err}
		}
	}
	// Ad-hoc rules go first: count rules, they see every request whatever
	// the file's rules do with it.
	if o.Rules, err = replay.Merge(adHoc, fileRules); err != nil {
		return usageError{fmt.Errorf("--limit: %w", err)}
	}
	if len(o.Rules.Rules) == 0 {
		return fmt.Errorf("%s: no rules to replay", *file)
	}
	if o.Routes != nil && len(o.Routes.Routes) == 0 {
		o.Routes = &proxy.Router{} // a file without routes routes nothing
	}

	html, err := openHTML(*htmlFile)
	if err != nil {
		return err
	}
	defer html.abandon()
	rp := replay.New(o)
	read, counts, err := readLogsWith(env, files, lf, func(names []string, o logs.ReadOptions) ([]logs.File, error) {
		return rp.ReadFiles(ctx, names, o)
	})
	if err != nil {
		return err
	}
	if n := rp.Baseline().Decisions(); n > 0 {
		fmt.Fprintf(env.stderr, "floodgate replay: %d decision-log records skipped: they are not requests (read the access log)\n", n)
	}
	res := rp.Result()
	res.Lines, res.Parsed, res.Unparsed, res.Files = counts.Lines, counts.Parsed, counts.Unparsed, read
	if html != nil {
		if err := html.write(env, func(w io.Writer) error { return report.ReplayHTML(w, res) }); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(env.stdout, res)
	}
	report.ReplayTable(env.stdout, res)
	return nil
}

// loadReplayConfig loads, defaults, validates and compiles a
// configuration's rules on the path `serve` uses, with every rule's
// algorithm replaced by alg when it is set. On problems it prints every
// one and returns errReported.
func loadReplayConfig(env environ, file, envName, alg string) (*rules.Set, *config.Config, error) {
	f, err := config.Load(file, envName, env.lookup)
	var problems config.Problems
	if err != nil && (!errors.As(err, &problems) || f == nil) {
		return nil, nil, err
	}
	f.Config.ApplyDefaults()
	if alg != "" {
		for i := range f.Config.Rules {
			if r := &f.Config.Rules[i]; r.Action == config.ActionBlock || r.Action == config.ActionCount {
				r.Algorithm = alg
			}
		}
	}
	problems = append(problems, f.Validate()...)
	set, ps := rules.Compile(f)
	problems = append(problems, ps...)
	if len(problems) > 0 {
		problems = dedupe(problems)
		fmt.Fprintln(env.stderr, problems.Error())
		fmt.Fprintf(env.stderr, "%s: %d problem%s\n", file, len(problems), plural(len(problems)))
		return nil, nil, errReported
	}
	return set, &f.Config, nil
}
