package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/textproto"
	"strings"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

func init() {
	register("explain", 30, "--config FILE [--env NAME] METHOD PATH [-H 'Name: value']… [--ip ADDR] [--json]", runExplain)
}

// headerFlags collects repeated -H 'Name: value' flags; a name given
// twice is a field the request repeats, in the order given.
type headerFlags admin.ExplainHeaders

func (h headerFlags) String() string { return "" }

func (h headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" {
		return fmt.Errorf("header %q is not 'Name: value'", s)
	}
	name = textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name))
	h[name] = append(h[name], strings.TrimSpace(value))
	return nil
}

// runExplain says what the gateway would do with one request, rule by
// rule, against a configuration and empty counters (offline). The admin
// endpoint POST /admin/explain does the same against live counters.
func runExplain(ctx context.Context, env environ, args []string) error {
	fs := newFlags(env, "explain", "--config FILE [--env NAME] METHOD PATH [-H 'Name: value']… [--ip ADDR] [--json]")
	file := fs.String("config", "", "configuration `file` (required)")
	envName := fs.String("env", "", "environment `name` to apply from the file's environments")
	ip := fs.String("ip", "192.0.2.1", "`address` the request comes from")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	headers := headerFlags{}
	fs.Var(headers, "H", "request header `'Name: value'` (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("--config is required")}
	}
	if len(pos) != 2 {
		return usageError{errors.New("want METHOD and PATH, such as: GET /api/v1/score-sets/urn:mavedb:1/scores")}
	}
	req, err := admin.ExplainRequest{Method: pos[0], Path: pos[1], Headers: admin.ExplainHeaders(headers), IP: *ip}.Build()
	if err != nil {
		return usageError{err}
	}
	f, data, problems, err := serveFlags{file: *file, env: *envName, envFlag: "--env"}.load(env)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		fmt.Fprintln(env.stderr, problems.Error())
		return errReported
	}
	hasher, err := gatewayHasher(env)
	if err != nil {
		return err
	}
	metrics := telemetry.NewMetrics("explain")
	srv, problems := gateway.NewServer(f, data, gateway.Options{
		Store:     gateway.NewMemoryStore(f.Config.Store.MaxKeys, nil, metrics),
		Metrics:   metrics,
		Logger:    slog.New(slog.DiscardHandler),
		KeyHasher: hasher, // key_hash as the gateway's logs give it
	})
	if len(problems) > 0 {
		fmt.Fprintln(env.stderr, dedupe(problems).Error())
		return errReported
	}
	ex := srv.Current().Explain(ctx, req)
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	ex.WriteText(env.stdout)
	return nil
}

// parseInterleaved parses flags that may come before, between or after
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsageReported
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
