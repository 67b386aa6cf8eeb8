package cli

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"text/template"

	"github.com/floodgate/floodgate/internal/config"
)

func init() {
	register("init", 5, initSynopsis, runInit)
}

const initSynopsis = "[--preset api|frontend] [--upstream URL] [--strict-prefix PATH] [--api-upstream URL] [-o FILE [--force]]"

// The starter configurations, one per preset: text/template over YAML,
// every value that comes from the command line passed through yamlString.
//
//go:embed init/*.yaml.tmpl
var initTemplates embed.FS

// starters are the presets' templates, parsed once.
var starters = func() map[string]*template.Template {
	funcs := template.FuncMap{"yaml": yamlString}
	m := map[string]*template.Template{}
	for _, name := range []string{"api", "frontend"} {
		m[name] = template.Must(template.New(name).Funcs(funcs).Option("missingkey=error").
			ParseFS(initTemplates, "init/"+name+".yaml.tmpl")).Lookup(name + ".yaml.tmpl")
	}
	return m
}()

// starter is what a preset's template is filled in with, each field
// already checked.
type starter struct {
	Upstream    string // the upstream URL (api) or the frontend's (frontend)
	APIUpstream string // frontend: the API's URL
	Prefix      string // api: the strict prefix, without a trailing slash
}

func runInit(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "init", initSynopsis)
	upstream := fs.String("upstream", "http://127.0.0.1:8000", "`URL` of the API (with --preset frontend: of the web frontend)")
	apiUpstream := fs.String("api-upstream", "", "with --preset frontend: `URL` of the API the pages call (default: --upstream)")
	preset := fs.String("preset", "api", "`name` of the starting point: api (an HTTP API) or frontend (pages, validated /api routes, sessions)")
	prefix := fs.String("strict-prefix", "/export/", "with --preset api: the `path` prefix of the expensive endpoints, which get a stricter limit")
	var output string
	fs.StringVar(&output, "output", "", "write to `file` instead of stdout")
	fs.StringVar(&output, "o", "", "short for --output `file`")
	force := fs.Bool("force", false, "overwrite the --output file if it exists")

	// Every mistake is reported on one line naming the fix; only -h
	// prints the flags.
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(env.stderr)
			usage()
			return err
		}
		return usageError{fmt.Errorf("%v (flags: --preset, --upstream, --strict-prefix, --api-upstream, --output/-o, --force; see floodgate init -h)", err)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q: init takes flags only (see floodgate init -h)", fs.Arg(0))}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	tmpl, ok := starters[*preset]
	if !ok {
		return usageError{fmt.Errorf("unknown preset %q: use --preset api or --preset frontend", *preset)}
	}
	s := starter{}
	var err error
	if s.Upstream, err = checkStarterURL("--upstream", *upstream); err != nil {
		return usageError{err}
	}
	switch *preset {
	case "api":
		if set["api-upstream"] {
			return usageError{errors.New("--api-upstream is for --preset frontend; with --preset api, --upstream names the API")}
		}
		if s.Prefix, err = checkStrictPrefix(*prefix); err != nil {
			return usageError{err}
		}
	case "frontend":
		if set["strict-prefix"] {
			return usageError{errors.New("--strict-prefix is for --preset api; edit the frontend preset's /api routes and rules instead")}
		}
		s.APIUpstream = s.Upstream
		if set["api-upstream"] {
			if s.APIUpstream, err = checkStarterURL("--api-upstream", *apiUpstream); err != nil {
				return usageError{err}
			}
		}
	}
	if set["force"] && output == "" {
		return usageError{errors.New("--force applies to --output FILE only: add -o FILE, or drop --force")}
	}

	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, s); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if output == "" {
		_, err := env.stdout.Write(buf.Bytes())
		return err
	}
	return writeStarter(env, output, buf.Bytes(), *force)
}

// writeStarter writes data to file, refusing to replace an existing file
// unless force: the check and the creation are one step (O_EXCL).
func writeStarter(env environ, file string, data []byte, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(file, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: pass --force to overwrite it, or choose another --output", file)
	}
	if err != nil {
		return fmt.Errorf("cannot write --output: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("cannot write --output: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write --output: %w", err)
	}
	next := "floodgate validate --config " + file
	// A variable the starter needs and this environment lacks (the
	// frontend preset's session secret) fails that command: say so first.
	if f, _ := config.Parse(file, data, "", env.lookup); f != nil {
		if missing := f.MissingVariables(); len(missing) > 0 {
			next = "set " + strings.Join(missing, ", ") + " (the file's comments say how), then " + next
		}
	}
	fmt.Fprintf(env.stdout, "wrote %s; next: %s\n", file, next)
	return nil
}

// checkStarterURL accepts what upstreams.NAME.url accepts (an absolute
// http or https URL with a host, no credentials, query or fragment) and
// nothing that would be read as a ${VAR} reference once written. It
// returns the URL as given.
func checkStarterURL(flagName, s string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("%s %q %s: give an http:// or https:// URL such as http://127.0.0.1:8000", flagName, s, why)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r > 0x7e }) {
		return "", bad("holds spaces, control or non-ASCII characters (percent-encode them)")
	}
	if strings.ContainsAny(s, `${}"'\`) {
		return "", bad(`holds one of $ { } " ' \ (percent-encode it)`)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", bad("is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", bad("is not an http or https URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return "", bad("has no host")
	case u.User != nil:
		return "", fmt.Errorf("%s has credentials in it: floodgate does not send URL credentials; give the URL without them (upstreams.NAME.auth sets credentials)", flagName)
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "?"):
		return "", bad("has a query")
	case strings.Contains(s, "#"):
		return "", bad("has a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", bad("has an invalid port (1-65535)")
		}
	}
	return s, nil
}

// checkStrictPrefix accepts a clean absolute path of letters, digits and
// -._~/ (so it can be written into a CEL string literal as it is) and
// returns it without its trailing slash.
func checkStrictPrefix(s string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("--strict-prefix %q %s: give a path such as /export/", s, why)
	}
	if !strings.HasPrefix(s, "/") {
		return "", bad("does not start with /")
	}
	if strings.ContainsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~/", r))
	}) {
		return "", bad("may hold only letters, digits and - . _ ~ /")
	}
	p := strings.TrimSuffix(s, "/")
	if p == "" || p == "/" {
		return "", bad("is every path, which the per-IP limit already covers")
	}
	if path.Clean(p) != p {
		return "", bad("is not a clean path (no //, . or .. segments): rules see the cleaned path")
	}
	if len(p) > 256 {
		return "", bad("is longer than 256 bytes")
	}
	return p, nil
}

// yamlString quotes s as a YAML double-quoted scalar: a JSON string is
// one, with every special character escaped. &, < and > are written as
// they are, not as json.Marshal's \u0026, \u003c and \u003e: the file is
// for people to read and edit, and a condition's && must look like the
// ones in docs/rules.md.
func yamlString(s string) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
