package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
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
		o.RouteAPIClients = replay.RouteAPIClients(c)
		o.Plans = map[string]string{}
		for _, cl := range c.APIClients.Clients {
			o.Plans[cl.ID] = cl.Plan
		}
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
	// Said here too: the JSON and HTML reports hold it where no one
	// reads it unless they look.
	for _, line := range report.OrderLines(res.Order) {
		fmt.Fprintf(env.stderr, "floodgate replay: %s\n", line)
	}
	for _, r := range res.Rules {
		if r.NotReplayed != "" {
			fmt.Fprintf(env.stderr, "floodgate replay: %s: not replayed: %s\n", r.Name, r.NotReplayed)
		}
		if r.Caveat != "" {
			fmt.Fprintf(env.stderr, "floodgate replay: %s: %s\n", r.Name, r.Caveat)
		}
	}
	if html != nil {
		if err := html.write(env, func(w io.Writer) error { return report.ReplayHTML(w, res) }); err != nil {
			return err
		}
	}
	if *asJSON {
		err = writeJSON(env.stdout, res)
	} else {
		report.ReplayTable(env.stdout, res)
	}
	if err == nil && !res.Replayed() {
		// The report says why, rule by rule; the exit status says that
		// there is no answer in it.
		err = errors.New("no rule could be replayed from these logs")
	}
	return err
}

// loadReplayConfig loads, defaults, validates and compiles a
// configuration's rules on the path `serve` uses, with every rule's
// algorithm replaced by alg when it is set. On problems it prints every
// one and returns errReported.
//
// Replay reads no credential and connects to no store: a variable the
// file refers to only in credential fields (credentialField) or in store
// settings replay does not read (unreadStore) may be unset. It stands in
// as standIn, and a store setting that refers to one is then left as
// unreadStore says (store.url: memory), so that production's rules replay
// without production's secrets.
func loadReplayConfig(env environ, file, envName, alg string) (*rules.Set, *config.Config, error) {
	f, err := config.Load(file, envName, env.lookup)
	if err := envError(f, "--env"); err != nil {
		return nil, nil, err
	}
	if names := unreadOnly(f); len(names) > 0 {
		var credentials, store, storeFields []string
		for _, name := range names {
			fields := slices.DeleteFunc(f.MissingVariableFields(name), credentialField)
			if len(fields) == 0 {
				credentials = append(credentials, name)
				continue
			}
			store = append(store, name)
			for _, p := range fields {
				if !slices.Contains(storeFields, p) {
					storeFields = append(storeFields, p)
				}
			}
		}
		lookup := func(k string) (string, bool) {
			if v, ok := env.lookup(k); ok || !slices.Contains(names, k) {
				return v, ok
			}
			return standIn, true
		}
		f, err = config.Load(file, envName, lookup)
		if f != nil {
			for _, p := range storeFields {
				unreadStore[p](&f.Config.Store)
			}
		}
		if len(credentials) > 0 {
			fmt.Fprintf(env.stderr, "floodgate replay: %s: %s not set: replay reads no credential and needs none\n",
				file, strings.Join(credentials, ", "))
		}
		if len(store) > 0 {
			fmt.Fprintf(env.stderr, "floodgate replay: %s: %s not set: replay counts in memory and connects to no store (%s)\n",
				file, strings.Join(store, ", "), strings.Join(storeFields, ", "))
		}
	}
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

// standIn is the value of an unset variable that a configuration file
// uses only in fields replay does not read: long enough for every
// credential field (sessions.secret wants 32 bytes), never used.
const standIn = "unset-for-replay-which-reads-no-credential-0123456789"

// unreadOnly returns the variables that f refers to, unset and without a
// default, only in fields that replay does not read: credentials
// (credentialField) and store settings (unreadStore).
func unreadOnly(f *config.File) []string {
	var names []string
	for _, name := range f.MissingVariables() {
		fields := f.MissingVariableFields(name)
		if len(fields) > 0 && !slices.ContainsFunc(fields, func(p string) bool { return !credentialField(p) && unreadStore[p] == nil }) {
			names = append(names, name)
		}
	}
	return names
}

// unreadStore are the store settings replay does not read, each with how
// to leave it when a variable it refers to is unset: replay counts in its
// own memory, with no round trip, whatever store.url names.
// store.max_keys bounds that memory, and store.failure_policy is the
// rules' default policy: replay reads those.
var unreadStore = map[string]func(*config.Store){
	"store.url":     func(s *config.Store) { s.URL = config.StoreMemory },
	"store.timeout": func(s *config.Store) { s.Timeout = "" }, // the default
}

// credentialField reports whether the field at path holds a credential,
// which replay never reads: the admin token, the session signing
// secrets, and an upstream's client id, client secret or header value.
func credentialField(path string) bool {
	switch path {
	case "admin.token", "sessions.secret":
		return true
	}
	if !strings.HasPrefix(path, "upstreams.") && !strings.HasPrefix(path, "upstreams[") {
		return false
	}
	for _, f := range []string{".auth.client_id", ".auth.client_secret", ".auth.header_value"} {
		if strings.HasSuffix(path, f) {
			return true
		}
	}
	return false
}
