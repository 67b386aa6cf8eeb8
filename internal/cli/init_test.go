package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/testnet"
	"go.yaml.in/yaml/v3"
)

// A session signing secret for the frontend preset, which reads it from
// the environment.
var initVars = map[string]string{"HMAC_SIGNING_SECRET": "a-test-secret-of-at-least-32-bytes-0123456789"}

// initFile runs floodgate init with args plus -o into a temporary file
// and returns the file's name.
func initFile(t *testing.T, args ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "floodgate.yaml")
	code, stdout, stderr := run(t, nil, append([]string{"init", "-o", file}, args...)...)
	if code != 0 {
		t.Fatalf("init %s: exit code %d; stderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	if want := "wrote " + file; !strings.HasPrefix(stdout, want) {
		t.Errorf("init's stdout = %q, want it to start with %q", stdout, want)
	}
	return file
}

// TestInitPresetsValidate: what each preset writes loads through the
// loader and compiler `floodgate validate` and `serve` use, with no
// problem and no warning.
func TestInitPresetsValidate(t *testing.T) {
	for _, tc := range []struct {
		preset string
		args   []string
		want   []string // in validate's summary
	}{
		{"api", nil, []string{
			"mode:      log-only\n",
			"  api          http://127.0.0.1:8000\n",
			"1. per-ip: block 600/1m per ip (sliding_window), candidates 300/1m\n",
			"request.path == '/export' || request.path.startsWith('/export/')",
		}},
		{"api", []string{"--upstream", "https://api.example.org:8443/v2", "--strict-prefix", "/reports"}, []string{
			"  api          https://api.example.org:8443/v2\n",
			"request.path == '/reports' || request.path.startsWith('/reports/')",
		}},
		{"frontend", nil, []string{
			"mode:      log-only\n",
			"  api          http://127.0.0.1:8000\n",
			"  frontend     http://127.0.0.1:8000\n",
			"sessions:  cookie fg_session",
			"  api-list     GET,HEAD /api/{resource}/ -> api\n",
			"  pages        / -> frontend\n",
			"1. per-session: block 60/1m + 1200/1h per session (sliding_window), candidates 30/1m\n",
		}},
		{"frontend", []string{"--upstream", "http://127.0.0.1:3000", "--api-upstream", "http://[::1]:8001"}, []string{
			"  api          http://[::1]:8001\n",
			"  frontend     http://127.0.0.1:3000\n",
		}},
	} {
		name := tc.preset + " " + strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			file := initFile(t, append([]string{"--preset", tc.preset}, tc.args...)...)
			code, stdout, stderr := run(t, initVars, "validate", "--config", file)
			if code != 0 || stderr != "" {
				t.Fatalf("validate: exit code %d, stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("validate's summary lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestInitAPIValidatesInAnEmptyEnvironment: the api preset needs no
// variable set (the acceptance's `validate` on a clean machine); the
// frontend preset names the one it needs.
func TestInitAPIValidatesInAnEmptyEnvironment(t *testing.T) {
	if code, _, stderr := run(t, nil, "validate", "--config", initFile(t)); code != 0 {
		t.Errorf("validate of the api preset with no variables set: exit code %d; stderr:\n%s", code, stderr)
	}
	code, _, stderr := run(t, nil, "validate", "--config", initFile(t, "--preset", "frontend"))
	if code != 1 || !strings.Contains(stderr, "HMAC_SIGNING_SECRET") {
		t.Errorf("validate of the frontend preset without HMAC_SIGNING_SECRET: exit code %d, stderr:\n%s", code, stderr)
	}
	// The next step init names is one that works: the variable first.
	file := filepath.Join(t.TempDir(), "fe.yaml")
	_, stdout, _ := run(t, nil, "init", "--preset", "frontend", "-o", file)
	if want := "next: set HMAC_SIGNING_SECRET (the file's comments say how), then floodgate validate --config " + file + "\n"; !strings.HasSuffix(stdout, want) {
		t.Errorf("init --preset frontend without the secret said %q, want it to end %q", stdout, want)
	}
	_, stdout, _ = run(t, initVars, "init", "--preset", "frontend", "-o", file, "--force")
	if !strings.HasSuffix(stdout, "; next: floodgate validate --config "+file+"\n") {
		t.Errorf("init --preset frontend with the secret set said %q", stdout)
	}
}

// TestInitWritesConditionsReadably: the conditions init writes read as
// docs/rules.md writes them, && and all, not as JSON's \u0026 escapes
// that a person editing the file would copy.
func TestInitWritesConditionsReadably(t *testing.T) {
	for _, preset := range []string{"api", "frontend"} {
		code, stdout, stderr := run(t, nil, "init", "--preset", preset)
		if code != 0 {
			t.Fatalf("init --preset %s: exit code %d, stderr %q", preset, code, stderr)
		}
		if i := strings.Index(stdout, `\u00`); i >= 0 {
			line := stdout[strings.LastIndexByte(stdout[:i], '\n')+1:]
			line, _, _ = strings.Cut(line, "\n")
			t.Errorf("init --preset %s writes a JSON escape: %s", preset, line)
		}
	}
	code, stdout, _ := run(t, nil, "init", "--strict-prefix", "/reports/")
	if want := `when: "request.method != 'OPTIONS' && (request.path == '/reports' || request.path.startsWith('/reports/'))"`; code != 0 || !strings.Contains(stdout, want) {
		t.Errorf("init --strict-prefix /reports/ lacks the line\n%s\nin:\n%s", want, stdout)
	}
}

// TestInitStdout: without --output the configuration goes to stdout,
// the same bytes as with it.
func TestInitStdout(t *testing.T) {
	for _, preset := range []string{"api", "frontend"} {
		code, stdout, stderr := run(t, nil, "init", "--preset", preset)
		if code != 0 || stderr != "" {
			t.Fatalf("init --preset %s: exit code %d, stderr %q", preset, code, stderr)
		}
		data, err := os.ReadFile(initFile(t, "--preset", preset))
		if err != nil {
			t.Fatal(err)
		}
		if stdout != string(data) {
			t.Errorf("init --preset %s: stdout differs from the --output file", preset)
		}
	}
}

// TestInitEverySettingHasAComment walks each preset's YAML: every key has
// a comment of its own, one line above it or at the end of its line.
func TestInitEverySettingHasAComment(t *testing.T) {
	for _, preset := range []string{"api", "frontend"} {
		t.Run(preset, func(t *testing.T) {
			_, out, _ := run(t, nil, "init", "--preset", preset)
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			settings := 0
			var walk func(n, parent *yaml.Node, path string)
			walk = func(n, parent *yaml.Node, path string) {
				switch n.Kind {
				case yaml.DocumentNode:
					for _, c := range n.Content {
						walk(c, n, path)
					}
				case yaml.SequenceNode:
					for i, c := range n.Content {
						walk(c, n, fmt.Sprintf("%s[%d]", path, i))
					}
				case yaml.MappingNode:
					for i := 0; i+1 < len(n.Content); i += 2 {
						k, v := n.Content[i], n.Content[i+1]
						p := strings.TrimPrefix(path+"."+k.Value, ".")
						settings++
						comment := k.HeadComment + k.LineComment + v.LineComment
						// The first key of a list item: its comment is the
						// item's, written above the "- ".
						if i == 0 && parent != nil && parent.Kind == yaml.SequenceNode {
							comment += n.HeadComment
						}
						if strings.TrimSpace(comment) == "" {
							t.Errorf("line %d: %s has no comment", k.Line, p)
						}
						if strings.Contains(strings.TrimSpace(k.HeadComment), "\n") {
							t.Errorf("line %d: %s has a comment of several lines, want one:\n%s", k.Line, p, k.HeadComment)
						}
						// A flow collection ({a: 1}, [x, y]) is one setting,
						// on one line.
						if v.Style&yaml.FlowStyle == 0 {
							walk(v, n, p)
						}
					}
				}
			}
			walk(&doc, nil, "")
			if settings < 20 {
				t.Errorf("found %d settings, want at least 20: is the walk reading the file?", settings)
			}
		})
	}
}

// TestInitBadInvocations: each mistake exits non-zero with one line on
// stderr that names the fix, writes nothing to stdout and leaves an
// existing file alone.
func TestInitBadInvocations(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "existing.yaml")
	const mine = "# an operator's file\n"
	if err := os.WriteFile(existing, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		fix  string
	}{
		{"unknown preset", []string{"--preset", "graphql"}, 2, "use --preset api or --preset frontend"},
		{"existing output file", []string{"-o", existing}, 1, "pass --force to overwrite it"},
		{"existing output file, long flag", []string{"--output", existing, "--preset", "frontend"}, 1, "pass --force to overwrite it"},
		{"malformed URL", []string{"--upstream", "http//127.0.0.1:8000"}, 2, "give an http:// or https:// URL"},
		{"URL without a scheme", []string{"--upstream", "127.0.0.1:8000"}, 2, "give an http:// or https:// URL"},
		{"URL of another scheme", []string{"--upstream", "ftp://example.org/"}, 2, "give an http:// or https:// URL"},
		{"URL without a host", []string{"--upstream", "http:///api"}, 2, "give an http:// or https:// URL"},
		{"URL with credentials", []string{"--upstream", "http://user:pw@example.org"}, 2, "give the URL without them"},
		{"URL with a query", []string{"--upstream", "http://example.org/?a=1"}, 2, "give an http:// or https:// URL"},
		{"URL with a bad port", []string{"--upstream", "http://example.org:99999"}, 2, "invalid port"},
		{"URL with a variable", []string{"--upstream", "http://${HOST}:8000"}, 2, "percent-encode"},
		{"URL that ends a quote", []string{"--upstream", "http://x\"\n: y"}, 2, "percent-encode"},
		{"malformed API URL", []string{"--preset", "frontend", "--api-upstream", "api:8001"}, 2, "give an http:// or https:// URL"},
		{"API URL with preset api", []string{"--api-upstream", "http://127.0.0.1:8001"}, 2, "--upstream names the API"},
		{"relative prefix", []string{"--strict-prefix", "export"}, 2, "give a path such as /export/"},
		{"prefix of every path", []string{"--strict-prefix", "/"}, 2, "give a path such as /export/"},
		{"prefix with a quote", []string{"--strict-prefix", "/x') || true || ('"}, 2, "give a path such as /export/"},
		{"prefix with dot segments", []string{"--strict-prefix", "/a/../b/"}, 2, "give a path such as /export/"},
		{"prefix with frontend", []string{"--preset", "frontend", "--strict-prefix", "/x/"}, 2, "is for --preset api"},
		{"force without output", []string{"--force"}, 2, "add -o FILE"},
		{"unknown flag", []string{"--upstrem", "http://127.0.0.1:8000"}, 2, "see floodgate init -h"},
		{"flag without its value", []string{"--upstream"}, 2, "see floodgate init -h"},
		{"positional argument", []string{"http://127.0.0.1:8000"}, 2, "init takes flags only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, nil, append([]string{"init"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d", code, tc.code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if lines := strings.Count(stderr, "\n"); lines != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr has %d lines, want 1:\n%s", lines, stderr)
			}
			if !strings.HasPrefix(stderr, "floodgate init: ") || !strings.Contains(stderr, tc.fix) {
				t.Errorf("stderr = %q, want floodgate init: … %q", stderr, tc.fix)
			}
		})
	}
	if data, err := os.ReadFile(existing); err != nil || string(data) != mine {
		t.Errorf("the existing file now holds %q (%v), want it untouched", data, err)
	}
	// With --force it is replaced.
	if code, _, stderr := run(t, nil, "init", "-o", existing, "--force"); code != 0 {
		t.Fatalf("init --force: exit code %d, stderr %q", code, stderr)
	}
	if data, _ := os.ReadFile(existing); !strings.Contains(string(data), "mode: log-only") {
		t.Errorf("after --force the file holds %q, want the starter configuration", data)
	}
}

// checkInitOutput runs init with upstream and prefix; when init accepts
// them, what it wrote must load with no problem and forward to exactly
// upstream.
func checkInitOutput(t *testing.T, upstream, prefix string) (accepted bool) {
	t.Helper()
	code, out, stderr := run(t, nil, "init", "--upstream", upstream, "--strict-prefix", prefix)
	if code != 0 {
		if code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("init --upstream %q --strict-prefix %q: exit code %d, stderr %q; want 2 and one line", upstream, prefix, code, stderr)
		}
		return false
	}
	f, err := config.Parse("init.yaml", []byte(out), "", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("init --upstream %q --strict-prefix %q wrote a file that does not load: %v", upstream, prefix, err)
	}
	if got := f.Config.Upstreams["api"].URL; got != upstream {
		t.Errorf("init --upstream %q wrote upstreams.api.url %q", upstream, got)
	}
	if n := len(f.Config.Rules); n != 2 {
		t.Errorf("init --strict-prefix %q wrote %d rules, want 2", prefix, n)
	}
	return true
}

var initInputs = []struct {
	upstream, prefix string
	ok               bool
}{
	{"http://127.0.0.1:8000", "/export/", true},
	{"https://api.example.org/base/path/", "/v1/bulk", true},
	{"http://[::1]:8081", "/a.b~c_d-e/", true},
	{"HTTP://EXAMPLE.ORG", "/Export", true},
	{"http://example.org/a%20b", "/x/", true},
	{"http://example.org/${X}", "/x/", false},
	{"http://example.org/$$", "/x/", false},
	{"http://example.org/}", "/x/", false},
	{"http://example.org/\"", "/x/", false},
	{"http://example.org/\\", "/x/", false},
	{"http://example.org/'", "/x/", false},
	{"http://example.org/\u00e9", "/x/", false},
	{"http://example.org/\x00", "/x/", false},
	{"http://example.org/#frag", "/x/", false},
	{"http://example.org?", "/x/", false},
	{"http://:80", "/x/", false},
	{"http://example.org:0", "/x/", false},
	{"http://example.org:http", "/x/", false},
	{"mailto:someone@example.org", "/x/", false},
	{"//example.org", "/x/", false},
	{"", "/x/", false},
	{"http://example.org", "", false},
	{"http://example.org", "//", false},
	{"http://example.org", "/x//y", false},
	{"http://example.org", "/x/./y", false},
	{"http://example.org", "/x/%2e%2e/", false},
	{"http://example.org", "/x y", false},
	{"http://example.org", "/x'", false},
	{"http://example.org", "/x\\", false},
	{"http://example.org", "/x\"", false},
	{"http://example.org", "/" + strings.Repeat("a", 300), false},
}

// TestInitHostileInput: URLs and prefixes that could break out of their
// YAML or CEL string, or that the loader would refuse, are refused by
// init; what it accepts loads as given.
func TestInitHostileInput(t *testing.T) {
	for _, tc := range initInputs {
		if got := checkInitOutput(t, tc.upstream, tc.prefix); got != tc.ok {
			t.Errorf("init --upstream %q --strict-prefix %q: accepted %v, want %v", tc.upstream, tc.prefix, got, tc.ok)
		}
	}
}

func FuzzInit(f *testing.F) {
	for _, tc := range initInputs {
		f.Add(tc.upstream, tc.prefix)
	}
	f.Fuzz(func(t *testing.T, upstream, prefix string) {
		checkInitOutput(t, upstream, prefix)
	})
}

// TestInitServeEnforce is the path a new user takes: init against their
// API, serve in log-only mode (everything forwarded, would-blocks
// counted), switch to enforce through the admin API, and the request over
// the limit is answered 429 with Retry-After, readable by a browser,
// without reaching the API.
func TestInitServeEnforce(t *testing.T) {
	var forwarded atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forwarded.Add(1)
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	defer api.Close()

	file := initFile(t, "--upstream", api.URL)
	// The starter's 600 a minute, lowered so that the test reaches it;
	// an hour's window, so that no window ends while the test runs.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lowered := strings.Replace(string(data), "limits: [600/1m]", "limits: [5/1h]", 1)
	if lowered == string(data) {
		t.Fatal("the starter has no per-ip limit of 600/1m to lower")
	}
	if err := os.WriteFile(file, []byte(lowered), 0o644); err != nil {
		t.Fatal(err)
	}

	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	vars := map[string]string{"FLOODGATE_LISTEN": pub, "FLOODGATE_ADMIN_LISTEN": adm}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testnet.Buffer
	env := environ{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, stdout: io.Discard, stderr: &stderr}
	done := make(chan int, 1)
	go func() { done <- run1(ctx, env, []string{"serve", "--config", file}) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exit code = %d; stderr:\n%s", code, stderr.String())
		}
	}()
	waitFor(t, "http://"+adm+"/healthz")

	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get("http://" + pub + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// Log-only: the limit is 5, and all 8 reach the API.
	for i := range 8 {
		if resp := get(fmt.Sprintf("/items/%d", i)); resp.StatusCode != 200 {
			t.Fatalf("log-only request %d: %d, want 200 from the API", i+1, resp.StatusCode)
		}
	}
	if n := forwarded.Load(); n != 8 {
		t.Fatalf("the API received %d requests, want 8", n)
	}

	req, _ := http.NewRequest("PUT", "http://"+adm+"/admin/mode", strings.NewReader("enforce"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT /admin/mode enforce: %d %s", resp.StatusCode, body)
	}

	resp = get("/items/9")
	if resp.StatusCode != 429 {
		t.Fatalf("over the limit once enforcing: %d, want 429", resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("429 Retry-After = %q, want a number of seconds", ra)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("429 Access-Control-Allow-Origin = %q, want *", got)
	}
	if got := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(got, "Retry-After") {
		t.Errorf("429 Access-Control-Expose-Headers = %q, want Retry-After among them", got)
	}
	if n := forwarded.Load(); n != 8 {
		t.Errorf("the API received %d requests, want still 8: the 429 was forwarded", n)
	}
}

// TestInitFrontendCountsEveryPageRequest: the frontend preset counts a
// page request of any method toward the per-address ceiling, as it counts
// a GET: a frontend renders a HEAD or a POST as well, so leaving them out
// would leave a way around every limit.
func TestInitFrontendCountsEveryPageRequest(t *testing.T) {
	file := initFile(t, "--preset", "frontend")
	ceiling := regexp.MustCompile(`per-ip-ceiling\s+block\s+allowed`)
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE"} {
		code, stdout, stderr := run(t, initVars, "explain", "--config", file, m, "/search?q=cat")
		if code != 0 {
			t.Fatalf("explain %s: exit code %d; stderr:\n%s", m, code, stderr)
		}
		if !ceiling.MatchString(stdout) {
			t.Errorf("explain %s /search: the per-IP ceiling does not count it:\n%s", m, stdout)
		}
	}
}
