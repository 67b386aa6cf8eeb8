// Package bench holds floodgate's benchmark scripts and their inputs; its
// test keeps bench/mavedb-bench.yaml in step with examples/mavedb.yaml,
// and bench/decide.sh's nginx configuration in step with docs/decide.md.
package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
)

const (
	examplePath = "../examples/mavedb.yaml"
	benchPath   = "mavedb-bench.yaml"

	// limitFactor multiplies the count of every limit ("N/window", in a
	// rule's or a candidate's limits, in the base and in every
	// environment): 1500/5m becomes 1500000000/5m, 5 million a second,
	// which no benchmark on one machine reaches.
	limitFactor = 1_000_000
	// secondsFactor multiplies the limits of a rule with cost:
	// upstream_seconds instead: the store counts them in milliseconds, at
	// most 2^32 - 1 a window, so 900/1h becomes 3 600 000/1h, a thousand
	// upstream-seconds a second, which no benchmark's 32 connections reach.
	secondsFactor = 4_000
	// inflightFactor multiplies every concurrency cap (max_inflight,
	// max_inflight_per_key): 4 becomes 1 000 000, the largest value the
	// loader accepts, above any benchmark's connection count.
	inflightFactor = 250_000
)

// limitRE is a limit as the configuration writes it: a count, a slash, a
// window.
var limitRE = regexp.MustCompile(`^([0-9]+)/([0-9]+[a-z]+)$`)

// TestBenchConfigIsExampleScaled checks that bench/mavedb-bench.yaml is
// examples/mavedb.yaml with every limit's count multiplied by limitFactor
// and every concurrency cap by inflightFactor, and with nothing else
// changed: the same keys in the same order, the same values, the same
// environments. Comments are not compared.
func TestBenchConfigIsExampleScaled(t *testing.T) {
	want := parse(t, examplePath)
	got := parse(t, benchPath)
	var diffs []string
	compare(&diffs, "", "", want, got, limitFactor)
	for _, d := range diffs {
		t.Errorf("%s: %s", benchPath, d)
	}
}

// TestBenchConfigLoads checks that the benchmark's configuration loads,
// validates and compiles like the example, in the base settings and in
// every environment.
func TestBenchConfigLoads(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for _, env := range []string{"", "staging", "production"} {
		f, err := config.Load(benchPath, env, lookup)
		if err != nil {
			t.Fatalf("config.Load(%q, env %q): %v", benchPath, env, err)
		}
		if ps := f.Validate(); len(ps) > 0 {
			t.Fatalf("Validate(%q, env %q): %v", benchPath, env, ps)
		}
		f.Config.ApplyDefaults()
		set, ps := rules.Compile(f)
		if len(ps) > 0 || set == nil {
			t.Fatalf("rules.Compile(%q, env %q): %v", benchPath, env, ps)
		}
		if n := len(set.Rules); n != 6 {
			t.Errorf("rules.Compile(%q, env %q): %d rules, want 6", benchPath, env, n)
		}
	}
}

// TestCompare checks the comparison itself on small documents: it must
// accept exactly the scaled numbers and reject every other change.
func TestCompare(t *testing.T) {
	const budget = "- name: c\n  cost: upstream_seconds\n  limits: [900/1h]\n"
	const budgetScaled = "- name: c\n  cost: upstream_seconds\n  limits: [3600000/1h]\n"
	base := "rules:\n- name: a\n  limits: [300/1m, 5/1s]\n  max_inflight: 4\n  retry_after: 300s\n" + budget
	tests := []struct {
		name  string
		bench string
		ok    bool
	}{
		{"scaled", "rules:\n- name: a\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n" + budgetScaled, true},
		{"unscaled limit", "rules:\n- name: a\n  limits: [300/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n" + budgetScaled, false},
		{"window changed", "rules:\n- name: a\n  limits: [300000000/5m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n" + budgetScaled, false},
		{"other number scaled", "rules:\n- name: a\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300000000s\n" + budgetScaled, false},
		{"cap unscaled", "rules:\n- name: a\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 4\n  retry_after: 300s\n" + budgetScaled, false},
		{"key added", "rules:\n- name: a\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n  action: count\n" + budgetScaled, false},
		{"limit dropped", "rules:\n- name: a\n  limits: [300000000/1m]\n  max_inflight: 1000000\n  retry_after: 300s\n" + budgetScaled, false},
		{"cost budget scaled by 1 000 000", "rules:\n- name: a\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n- name: c\n  cost: upstream_seconds\n  limits: [900000000/1h]\n", false},
		{"name changed", "rules:\n- name: b\n  limits: [300000000/1m, 5000000/1s]\n  max_inflight: 1000000\n  retry_after: 300s\n" + budgetScaled, false},
	}
	for _, tt := range tests {
		var a, b yaml.Node
		if err := yaml.Unmarshal([]byte(base), &a); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(tt.bench), &b); err != nil {
			t.Fatal(err)
		}
		var diffs []string
		compare(&diffs, "", "", &a, &b, limitFactor)
		if ok := len(diffs) == 0; ok != tt.ok {
			t.Errorf("%s: compare found %q, want ok=%v", tt.name, diffs, tt.ok)
		}
	}
}

func parse(t *testing.T, path string) *yaml.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return &n
}

// compare appends to diffs every way in which got differs from want
// scaled. at is the field path, key the mapping key the nodes are the
// value of (for a sequence's items, the key of the sequence), factor the
// limits' factor (secondsFactor inside a rule with cost: upstream_seconds).
func compare(diffs *[]string, at, key string, want, got *yaml.Node, factor int64) {
	if want.Kind != got.Kind {
		*diffs = append(*diffs, fmt.Sprintf("%s (line %d): kind %v, want %v", at, got.Line, got.Kind, want.Kind))
		return
	}
	switch want.Kind {
	case yaml.DocumentNode:
		if len(want.Content) != len(got.Content) {
			*diffs = append(*diffs, "documents differ")
			return
		}
		for i := range want.Content {
			compare(diffs, at, key, want.Content[i], got.Content[i], factor)
		}
	case yaml.MappingNode:
		if len(want.Content) != len(got.Content) {
			*diffs = append(*diffs, fmt.Sprintf("%s (line %d): %d keys, want %d", at, got.Line, len(got.Content)/2, len(want.Content)/2))
			return
		}
		for i := 0; i+1 < len(want.Content); i += 2 {
			if k, v := want.Content[i], want.Content[i+1]; k.Value == "cost" && v.Value == "upstream_seconds" {
				factor = secondsFactor
			}
		}
		for i := 0; i+1 < len(want.Content); i += 2 {
			wk, gk := want.Content[i], got.Content[i]
			if wk.Value != gk.Value {
				*diffs = append(*diffs, fmt.Sprintf("%s (line %d): key %q, want %q", at, gk.Line, gk.Value, wk.Value))
				continue
			}
			compare(diffs, join(at, wk.Value), wk.Value, want.Content[i+1], got.Content[i+1], factor)
		}
	case yaml.SequenceNode:
		if len(want.Content) != len(got.Content) {
			*diffs = append(*diffs, fmt.Sprintf("%s (line %d): %d items, want %d", at, got.Line, len(got.Content), len(want.Content)))
			return
		}
		for i := range want.Content {
			compare(diffs, at+"["+strconv.Itoa(i)+"]", key, want.Content[i], got.Content[i], factor)
		}
	case yaml.ScalarNode:
		w, err := scaled(key, want.Value, factor)
		if err != nil {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v", at, err))
			return
		}
		if got.Value != w || got.Tag != want.Tag {
			*diffs = append(*diffs, fmt.Sprintf("%s (line %d): %s %q, want %s %q", at, got.Line, got.Tag, got.Value, want.Tag, w))
		}
	case yaml.AliasNode:
		compare(diffs, at, key, want.Alias, got.Alias, factor)
	}
}

// scaled returns what the benchmark's file must hold where the example
// holds v under key.
func scaled(key, v string, factor int64) (string, error) {
	switch key {
	case "limits", "candidates":
		m := limitRE.FindStringSubmatch(v)
		if m == nil {
			return "", fmt.Errorf("limit %q in %s is not N/window: teach bench_test.go its form", v, examplePath)
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n*factor, 10) + "/" + m[2], nil
	case "max_inflight", "max_inflight_per_key":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(n*inflightFactor, 10), nil
	}
	return v, nil
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// TestScriptsParse checks that bash reads the benchmark scripts and the
// library they share, which no other test runs (they take minutes and
// want the machine to themselves).
func TestScriptsParse(t *testing.T) {
	for _, script := range []string{"decide.sh", "gateway.sh", "idle.sh", "lib.sh"} {
		out, err := exec.Command("bash", "-n", script).CombinedOutput()
		if err != nil {
			t.Errorf("bash -n %s: %v\n%s", script, err, out)
		}
	}
}

// snippetDirectives are the directives of docs/decide.md's nginx snippet
// that make up what nginx does for each request it asks floodgate about.
// proxy_pass is not among them: the template passes to upstream blocks
// with keep-alive, to the API as nginx-limit-req.conf.tmpl does, so that
// the asking is all that differs between the two.
var snippetDirectives = regexp.MustCompile(`^(auth_request|auth_request_set|add_header|error_page|internal|proxy_pass_request_body|proxy_set_header|default_type|return|if) `)

// TestDecideNginxTemplate checks that bench/nginx-auth-request.conf.tmpl,
// the nginx bench/decide.sh measures, holds every directive of
// docs/decide.md's nginx snippet, so that the benchmark measures what the
// page tells operators to run, and that it fills in to a configuration
// nginx accepts (when nginx is installed).
func TestDecideNginxTemplate(t *testing.T) {
	doc, err := os.ReadFile("../docs/decide.md")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, ok := strings.Cut(string(doc), "```nginx\n")
	snippet, _, ok2 := strings.Cut(snippet, "```")
	if !ok || !ok2 {
		t.Fatal("docs/decide.md has no nginx snippet")
	}
	tmpl, err := os.ReadFile("nginx-auth-request.conf.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(tmpl), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range strings.Split(snippet, "\n") {
		l = strings.TrimSpace(l)
		if !snippetDirectives.MatchString(l) && l != "internal;" {
			continue
		}
		n++
		if !lines[l] {
			t.Errorf("nginx-auth-request.conf.tmpl lacks docs/decide.md's %q", l)
		}
	}
	if n < 20 {
		t.Errorf("found %d directives in docs/decide.md's nginx snippet, want at least 20", n)
	}

	bin, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (Debian: apt-get install nginx-light): the filled-in template is not checked by nginx -t")
	}
	dir := t.TempDir()
	conf := strings.NewReplacer("@DIR@", dir, "@PORT@", "18180", "@UPSTREAM_PORT@", "18181", "@DECIDE_PORT@", "18183").Replace(string(tmpl))
	if p := regexp.MustCompile(`@[A-Z_]+@`).FindString(conf); p != "" {
		t.Errorf("the filled-in template still holds %s", p)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", path).CombinedOutput()
	if err != nil {
		t.Errorf("nginx -t: %v\n%s", err, out)
	}
}
