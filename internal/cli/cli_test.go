package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// run runs the command line with an empty environment plus vars.
func run(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := environ{
		lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		stdout: &out, stderr: &errb,
	}
	code = run1(context.Background(), env, args)
	return code, out.String(), errb.String()
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
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

func TestValidateReportsEveryProblem(t *testing.T) {
	// An unknown key, a CEL type error and a malformed limit: all three,
	// with their lines, in one run, and a non-zero exit.
	code, stdout, stderr := run(t, nil, "validate", "--config", "testdata/invalid.yaml")
	if code != 1 {
		t.Errorf("exit code = %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	golden(t, "invalid.golden", stderr)
	for _, want := range []string{"invalid.yaml:9: rules[0].retry_afer", "invalid.yaml:11: rules[1].when: CEL", "invalid.yaml:12: rules[1].limits[0]"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

func TestValidateLeavesOutFollowOnProblems(t *testing.T) {
	// A condition whose variable is unset is that problem alone, not also
	// the CEL syntax error of what is left; serve says the same.
	file := filepath.Join(t.TempDir(), "unset.yaml")
	if err := os.WriteFile(file, []byte(`
upstreams: {api: {url: "http://127.0.0.1:9"}}
rules:
  - {name: a, when: "request.path == ${FOO}", limits: [1/1m]}
  - {name: b, when: "request.path ==", limits: [1/1m]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "serve"} {
		code, _, stderr := run(t, nil, cmd, "--config", file)
		if code != 1 || strings.Count(stderr, "rules[0]") != 1 || !strings.Contains(stderr, "FOO is not set") ||
			!strings.Contains(stderr, "rules[1].when: CEL") || !strings.HasSuffix(stderr, ": 2 problems\n") {
			t.Errorf("%s: exit %d, want the unset variable and rule b's CEL error only:\n%s", cmd, code, stderr)
		}
	}
}

func TestValidatePrintsEffectiveRules(t *testing.T) {
	code, stdout, stderr := run(t, map[string]string{"FLOODGATE_TRUSTED_PROXIES": "10.0.0.0/8,192.0.2.10"},
		"validate", "--config", "../../examples/mavedb.yaml")
	if code != 0 {
		t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, stderr)
	}
	golden(t, "mavedb.golden", stdout)
}

// TestValidateListsWhatTheDecisionListenerSkips: with the decision
// listener on, validate names every rule it cannot enforce and why.
func TestValidateListsWhatTheDecisionListenerSkips(t *testing.T) {
	code, stdout, stderr := run(t, map[string]string{"FLOODGATE_TRUSTED_PROXIES": "127.0.0.1", "FLOODGATE_DECIDE_LISTEN": "127.0.0.1:8083"},
		"validate", "--config", "../../examples/mavedb.yaml")
	if code != 0 {
		t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, stderr)
	}
	_, decide, ok := strings.Cut(stdout, "\ndecision listener:")
	if !ok {
		t.Fatalf("no decision listener section:\n%s", stdout)
	}
	golden(t, "mavedb-decide.golden", "decision listener:"+decide)
}

// TestValidateListsWhatOnlyTheGatewayForwards: routes' query filters,
// rewrites and body bounds change the request floodgate forwards; behind
// the decision listener the proxy forwards the client's request as it
// came, and validate says so route by route.
func TestValidateListsWhatOnlyTheGatewayForwards(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "f.yaml")
	yaml := `client_ip: {trusted_proxies: [127.0.0.1]}
decide: {listen: 127.0.0.1:8083, protocol: nginx}
upstreams: {api: {url: "http://127.0.0.1:8081"}}
routes:
  - {name: search, path: /search, upstream: api, query: {allow: [q, page_size], max: {page_size: 20}, over_max: drop}}
  - {name: upload, path: /upload, upstream: api, max_body_bytes: 1024, rewrite: /v1/upload}
  - {name: rest, path: /, upstream: api, query: {max: {page: 100}}}
rules:
  - {name: r, key: [ip], limits: [10/1m]}
`
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, nil, "validate", "--config", conf)
	if code != 0 {
		t.Fatalf("exit code = %d; stderr:\n%s", code, stderr)
	}
	_, got, _ := strings.Cut(stdout, "\ndecision listener:")
	want := ` 127.0.0.1:8083 (protocol nginx), answering 127.0.0.1 only
  every rule is enforced there
  done only when floodgate forwards (the proxy forwards the client's request as it came):
  - route search query.allow: the upstream gets every query parameter the client sent (the rules see only the allowed ones)
  - route search query.over_max drop: a value over query.max reaches the upstream (the rules do not see it)
  - route upload rewrite: the upstream gets the path the proxy sends, not /v1/upload
  - route upload max_body_bytes: the proxy sends no body to decide on; bound bodies in the proxy (nginx client_max_body_size)
`
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("validate's decision listener section (-got +want):\n%s", diff)
	}
}

// TestValidateWarnsForwardedOnDecide: the proxies that ask the decision
// listener pass a client's Forwarded field on as it came, so reading
// Forwarded there lets a client choose its address unless something
// trusted writes the field; validate says so, and only then.
func TestValidateWarnsForwardedOnDecide(t *testing.T) {
	const warning = "warning: client_ip: header Forwarded on the decision listener"
	for _, tt := range []struct {
		name, clientIP, decide string
		want                   bool
	}{
		{"Forwarded, decide on", "{trusted_proxies: [127.0.0.1], header: forwarded}", "{listen: 127.0.0.1:8083, protocol: nginx}", true},
		{"Forwarded, decide off", "{trusted_proxies: [127.0.0.1], header: Forwarded}", "{listen: \"off\", protocol: nginx}", false},
		{"X-Forwarded-For, decide on", "{trusted_proxies: [127.0.0.1]}", "{listen: 127.0.0.1:8083, protocol: forwarded}", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "f.yaml")
			yaml := "client_ip: " + tt.clientIP + "\ndecide: " + tt.decide + `
upstreams: {api: {url: "http://127.0.0.1:8081"}}
rules:
  - {name: r, key: [ip], limits: [10/1m]}
`
			if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, nil, "validate", "--config", conf)
			if code != 0 {
				t.Fatalf("exit code = %d; stderr:\n%s", code, stderr)
			}
			if got := strings.Contains(stderr, warning); got != tt.want {
				t.Errorf("warned = %v, want %v; stderr:\n%s", got, tt.want, stderr)
			}
		})
	}
}

// TestValidateWarnsSharedHeaderKey: a rule keyed by a header (or a query
// parameter) alone puts every request without it in one counter, so all
// the clients that send no API key share one limit; validate warns, at
// the key's line, with the condition that counts only requests that send
// it, and stays quiet when the condition names it or the key also tells
// clients apart.
func TestValidateWarnsSharedHeaderKey(t *testing.T) {
	const warning = `f.yaml:4: warning: rules[0].key[0]: every request without the header X-Api-Key shares one counter of rule per-key, ` +
		`so the clients that send none are limited together; to count only requests that send it, add when: "'x-api-key' in request.headers"`
	for _, tt := range []struct {
		name, rule string
		want       string // a warning's text, "" for none
	}{
		{"header alone", `key: ["header:X-Api-Key"]`, warning},
		{"header and method", `key: ["header:X-Api-Key", method]`, "warning: rules[0].key[0]"},
		{"query alone", `key: ["query:token"]`, `add when: "'token' in request.query"`},
		{"count rule", "action: count\n    key: [\"header:X-Api-Key\"]", "every request without the header X-Api-Key"},
		{"condition tests the header", "when: \"'x-api-key' in request.headers\"\n    key: [\"header:X-Api-Key\"]", ""},
		{"condition reads the header", "when: \"request.headers[?'x-api-key'].orValue('') != ''\"\n    key: [\"header:X-Api-Key\"]", ""},
		{"header and address", `key: ["header:X-Api-Key", ip]`, ""},
		{"address only", `key: [ip]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "f.yaml")
			yaml := "upstreams: {api: {url: \"http://127.0.0.1:8081\"}}\nrules:\n  - name: per-key\n    " + tt.rule + "\n    limits: [300/1m]\n"
			if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, nil, "validate", "--config", conf)
			if code != 0 {
				t.Fatalf("exit code = %d; stderr:\n%s", code, stderr)
			}
			switch {
			case tt.want == "" && stderr != "":
				t.Errorf("stderr = %q, want no warning", stderr)
			case tt.want != "" && !strings.Contains(stderr, tt.want):
				t.Errorf("stderr = %q, want a warning with %q", stderr, tt.want)
			}
		})
	}
}

// TestValidateHidesCredentials: validate's summary goes to CI logs and,
// through the systemd unit's ExecStartPre, the journal: the store URL's
// password is masked, as in serve's logs. (An upstream's
// URL may not carry credentials at all.)
func TestValidateHidesCredentials(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "f.yaml")
	yaml := `store: {url: "redis://:s3cretpw@127.0.0.1:6379/0", failure_policy: fail_closed}
upstreams: {api: {url: "http://127.0.0.1:8081"}}
rules:
  - name: r
    when: 'true'
    key: [ip]
    limits: [10/1m]
`
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, nil, "validate", "--config", conf)
	if code != 0 {
		t.Fatalf("exit code = %d; stderr:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "s3cretpw") {
		t.Errorf("validate printed the store's password:\n%s%s", stdout, stderr)
	}
	if want := "store:     redis://:xxxxx@127.0.0.1:6379/0 (failure_policy fail_closed)\n"; !strings.Contains(stdout, want) {
		t.Errorf("validate's summary lacks %q:\n%s", want, stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"no command", nil, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"validate without config", []string{"validate"}, 2},
		{"unknown flag", []string{"validate", "--nope"}, 2},
		{"stray argument", []string{"validate", "--config", "x.yaml", "extra"}, 2},
		{"missing file", []string{"validate", "--config", "testdata/does-not-exist.yaml"}, 1},
		{"serve without config", []string{"serve"}, 2},
		{"help", []string{"help"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, _ := run(t, nil, tc.args...); code != tc.want {
				t.Errorf("floodgate %s: exit code %d, want %d", strings.Join(tc.args, " "), code, tc.want)
			}
		})
	}
}

// TestHelpNamesEveryFlag: the overview `floodgate --help` prints names
// every flag of every command, as the command's own -h lists them (a
// short alias counts when its long form is named).
func TestHelpNamesEveryFlag(t *testing.T) {
	_, stdout, stderr := run(t, nil, "--help")
	overview := stdout + stderr
	commands := regexp.MustCompile(`(?m)^  floodgate ([a-z-]+)(.*)$`).FindAllStringSubmatch(overview, -1)
	if len(commands) < 5 {
		t.Fatalf("the overview lists %d commands:\n%s", len(commands), overview)
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)[^\n]*\n\s+(.*)$`)
	for _, c := range commands {
		name, line := c[1], c[2]
		_, out, errOut := run(t, nil, name, "-h")
		// Each flag with its short alias, if it has one: either names it.
		forms := map[string][]string{}
		for _, f := range flagLine.FindAllStringSubmatch(out+errOut, -1) {
			flag, usage := f[1], f[2]
			if long, ok := strings.CutPrefix(usage, "short for --"); ok {
				long = strings.Fields(long)[0]
				forms[long] = append(forms[long], flag)
				continue
			}
			forms[flag] = append(forms[flag], flag)
		}
		for flag, names := range forms {
			named := false
			for _, n := range names {
				named = named || regexp.MustCompile(`(^|[ \[])-{1,2}`+regexp.QuoteMeta(n)+`\b`).MatchString(line)
			}
			if !named {
				t.Errorf("floodgate --help: %s's line does not name --%s:\n  %s", name, flag, line)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := run(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "floodgate ") {
		t.Errorf("version: code %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"\ncommit:  ", "\nbuilt:   ", "\ngo:      " + runtime.Version()} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version prints %q, lacking %q", stdout, want)
		}
	}
	code, stdout, _ = run(t, nil, "version", "--json")
	var got map[string]string
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("version --json: code %d, %v: %q", code, err, stdout)
	}
	for _, field := range []string{"version", "commit", "date", "go", "os", "arch"} {
		if _, ok := got[field]; !ok {
			t.Errorf("version --json lacks %q: %s", field, stdout)
		}
	}
	if got["version"] == "" || got["go"] != runtime.Version() {
		t.Errorf("version --json = %s, want a version and go %s", stdout, runtime.Version())
	}
}

// TestValidateWarnsOnlyForANamedHeader: a file that names no forwarding
// header and trusts no proxy is the plain setup, not a mistake (before,
// every such file — both examples among them — was warned that
// X-Forwarded-For is ignored, the default filled in being taken for the
// operator's choice); a header named while nothing is trusted is warned of.
func TestValidateWarnsOnlyForANamedHeader(t *testing.T) {
	const rest = `upstreams: {api: {url: "http://127.0.0.1:8081"}}
rules:
  - {name: r, key: [ip], limits: [10/1m]}
`
	for _, tc := range []struct {
		name, yaml string
		warned     bool
	}{
		{"nothing named", rest, false},
		{"header named, nothing trusted", "client_ip: {header: Forwarded}\n" + rest, true},
		{"header named and trusted hops", "client_ip: {header: Forwarded, trusted_hops: 1}\n" + rest, false},
	} {
		conf := filepath.Join(t.TempDir(), "f.yaml")
		if err := os.WriteFile(conf, []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := run(t, nil, "validate", "--config", conf)
		if code != 0 {
			t.Fatalf("%s: exit code %d; stderr:\n%s", tc.name, code, stderr)
		}
		if got := strings.Contains(stderr, "is ignored: no trusted proxies"); got != tc.warned {
			t.Errorf("%s: warned %v, want %v; stderr:\n%s", tc.name, got, tc.warned, stderr)
		}
	}
}

// TestHelpOnStandardOutput: a command's usage asked for with -h is the
// answer, on standard output (as `floodgate help` writes it), exit 0; after
// a bad flag it goes with the error, on standard error, exit 2.
func TestHelpOnStandardOutput(t *testing.T) {
	for _, args := range [][]string{{"serve", "-h"}, {"validate", "--help"}, {"replay", "-help"}, {"diff", "-h"}} {
		code, stdout, stderr := run(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "Usage: floodgate "+args[0]) || !strings.Contains(stdout, "-config") || stderr != "" {
			t.Errorf("floodgate %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout alone", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	code, stdout, stderr := run(t, nil, "serve", "--no-such-flag")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "no-such-flag") || !strings.Contains(stderr, "Usage: floodgate serve") {
		t.Errorf("floodgate serve --no-such-flag: exit %d, stdout %q, stderr %q; want 2, the error and the usage on stderr", code, stdout, stderr)
	}
}
