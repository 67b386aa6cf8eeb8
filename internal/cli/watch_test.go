package cli

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/telemetry"
)

func TestSettlingDelay(t *testing.T) {
	const path, settle = "/etc/floodgate/floodgate.yaml", 2 * time.Second
	ev := func(name string, op fsnotify.Op) fsnotify.Event { return fsnotify.Event{Name: name, Op: op} }
	type step struct {
		ev     fsnotify.Event
		want   time.Duration
		wantOK bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"an editor's rename over the file", []step{
			{ev("/etc/floodgate/.floodgate.yaml.swp", fsnotify.Create), replaceDebounce, true},
			{ev("/etc/floodgate/.floodgate.yaml.swp", fsnotify.Write), 0, false},
			{ev(path, fsnotify.Create), replaceDebounce, true},
		}},
		{"a ConfigMap's symlink swap", []step{
			{ev("/etc/floodgate/..data_tmp", fsnotify.Create), replaceDebounce, true},
			{ev("/etc/floodgate/..data", fsnotify.Create), replaceDebounce, true},
		}},
		{"written in place", []step{
			{ev(path, fsnotify.Write), settle, true},
			{ev(path, fsnotify.Write), settle, true},
		}},
		{"written in place while another file appears", []step{
			{ev(path, fsnotify.Write), settle, true},
			{ev("/etc/floodgate/other.yaml", fsnotify.Create), 0, false},
			{ev("/etc/floodgate/..data", fsnotify.Rename), 0, false},
		}},
		{"written in place, then replaced", []step{
			{ev(path, fsnotify.Write), settle, true},
			{ev(path, fsnotify.Rename), replaceDebounce, true},
			{ev("/etc/floodgate/x", fsnotify.Create), replaceDebounce, true},
		}},
		{"another file written", []step{
			{ev("/etc/floodgate/notes.txt", fsnotify.Write), 0, false},
		}},
	}
	for _, tt := range tests {
		var s settling
		for i, st := range tt.steps {
			d, ok := s.delay(st.ev, path, settle)
			if d != st.want || ok != st.wantOK {
				t.Errorf("%s: step %d (%v): delay = %v, %v; want %v, %v", tt.name, i, st.ev, d, ok, st.want, st.wantOK)
			}
		}
	}
}

// TestWatchNeverAppliesAHalfWrittenFile: a file truncated and half written
// in place is not read while its writer may still be at it (settle is an
// hour here); the complete file, renamed over it, is read at once.
func TestWatchNeverAppliesAHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "floodgate.yaml")
	full := "rules:\n" + strings.Repeat("  - {name: r, limits: [1/s]}\n", 6)
	if err := os.WriteFile(path, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seen []string
	got := make(chan struct{}, 8)
	err := watchFile(ctx, path, fileSum(path), time.Hour, func() {
		b, _ := os.ReadFile(path)
		mu.Lock()
		seen = append(seen, string(b))
		mu.Unlock()
		got <- struct{}{}
	}, telemetry.NewLogger(io.Discard, "info"))
	if err != nil {
		t.Fatal(err)
	}
	// In place: truncated, and half of the new content written.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Replace(full, "1/s", "2/s", -1)
	f.WriteString(next[:len(next)/2])
	f.Close()
	// Safely: the whole file written beside it, then renamed over it.
	tmp := filepath.Join(dir, ".floodgate.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second): // a bound, not a measure
		t.Fatal("the renamed file was never read")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != next {
		t.Errorf("read %d times: %q; want once, the complete file", len(seen), seen)
	}
}

func TestDiffRules(t *testing.T) {
	rule := func(name, limit string) config.Rule {
		return config.Rule{Name: name, Action: "block", Key: []string{"ip"}, Limits: []string{limit}}
	}
	old := config.Config{Rules: []config.Rule{rule("a", "1/s"), rule("b", "2/s"), rule("c", "3/s")}}
	next := config.Config{Rules: []config.Rule{rule("a", "1/s"), rule("b", "20/s"), rule("d", "4/s")}}
	got := diffRules(&old, &next)
	want := ruleChanges{added: []string{"d"}, removed: []string{"c"}, changed: []string{"b"}}
	if diff := cmp.Diff(got, want, cmp.AllowUnexported(ruleChanges{})); diff != "" {
		t.Errorf("diffRules (-got +want):\n%s", diff)
	}
	if got := diffRules(&old, &old); len(got.added)+len(got.removed)+len(got.changed) != 0 {
		t.Errorf("diffRules(same) = %+v, want nothing", got)
	}
	// What a request costs, when it is counted and the concurrency caps
	// are a rule's own as much as its limits.
	for _, tc := range []struct {
		name   string
		change func(*config.Rule)
	}{
		{"cost", func(r *config.Rule) { r.Cost = "upstream_seconds" }},
		{"count_when", func(r *config.Rule) { r.CountWhen = "response.status == 401" }},
		{"max_inflight", func(r *config.Rule) { r.MaxInflight = 4 }},
		{"max_inflight_per_key", func(r *config.Rule) { r.MaxInflightPerKey = 1 }},
	} {
		next := config.Config{Rules: []config.Rule{rule("a", "1/s")}}
		tc.change(&next.Rules[0])
		if got := diffRules(&config.Config{Rules: []config.Rule{rule("a", "1/s")}}, &next); !slices.Equal(got.changed, []string{"a"}) {
			t.Errorf("diffRules with another %s: changed %q, want [a]", tc.name, got.changed)
		}
	}
}

// TestDiffRulesPlans: a rule with limits_from: plan is one rule per plan
// with limits, NAME.PLAN, as in metrics and logs: changing, adding or
// removing a plan's limits is a change of that rule (its counters start
// afresh), and moving a client to another plan changes no rule.
func TestDiffRulesPlans(t *testing.T) {
	conf := func(plans map[string][]string, clientPlan string) config.Config {
		return config.Config{
			APIClients: config.APIClients{Plans: plans, Clients: []config.APIClient{{ID: "a", Plan: clientPlan}}},
			Rules:      []config.Rule{{Name: "plan", Action: "block", Key: []string{"api_client"}, LimitsFrom: config.LimitsFromPlan}},
		}
	}
	old := conf(map[string][]string{"standard": {"5/1m"}, "enhanced": {"10/1m"}, "gold": {"20/1m"}, "exempt": {}}, "standard")
	next := conf(map[string][]string{"standard": {"8/1m"}, "enhanced": {"10/1m"}, "exempt": {"1000/1m"}}, "enhanced")
	got := diffRules(&old, &next)
	want := ruleChanges{added: []string{"plan.exempt"}, removed: []string{"plan.gold"}, changed: []string{"plan.standard"}}
	if diff := cmp.Diff(got, want, cmp.AllowUnexported(ruleChanges{})); diff != "" {
		t.Errorf("diffRules (-got +want):\n%s", diff)
	}
	moved := conf(old.APIClients.Plans, "enhanced")
	if got := diffRules(&old, &moved); len(got.added)+len(got.removed)+len(got.changed) != 0 {
		t.Errorf("diffRules(a client moved to another plan) = %+v, want nothing", got)
	}
}

// TestReloadLogsRuleChanges: every reload names the rules it adds,
// removes and changes, and one that removes rules (as a truncated file
// does) says so at WARN.
func TestReloadLogsRuleChanges(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	three := opsYAML(up.URL, "5/1h") + "  - {name: csv, limits: [100/5m]}\n  - {name: bulk, limits: [10/5m]}\n"
	g := startServe(t, three)
	g.write(strings.Replace(three, "100/5m", "200/5m", 1))
	g.waitMetric(reloadOK, 2)
	g.write(opsYAML(up.URL, "5/1h")) // csv and bulk gone
	g.waitMetric(reloadOK, 3)
	var changed, removed map[string]any
	for _, line := range strings.Split(g.stderr.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec["msg"] {
		case "configuration reloaded":
			changed = rec
		case "configuration reloaded without rules it had":
			removed = rec
		}
	}
	if changed == nil || fmt.Sprint(changed["rules_changed"]) != "[csv]" || changed["level"] != "INFO" {
		t.Errorf("the reload that changed csv's limit logged %v", changed)
	}
	// What none was is an empty list, as JSON readers expect, not null.
	if added, ok := changed["rules_added"].([]any); !ok || len(added) != 0 {
		t.Errorf("rules_added of a reload that added none: %#v, want []", changed["rules_added"])
	}
	if removed == nil || fmt.Sprint(removed["rules_removed"]) != "[csv bulk]" || removed["level"] != "WARN" {
		t.Errorf("the reload that removed csv and bulk logged %v; log:\n%s", removed, g.stderr.String())
	}
}

// TestWatchReportsAFileItCannotRead: a configuration file removed, or
// replaced by one floodgate may not read, is a rejected reload (logged,
// counted), not silence until the next restart fails; the file back is
// reloaded.
func TestWatchReportsAFileItCannotRead(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	g := startServe(t, opsYAML(up.URL, "5/1h"))
	if err := os.Remove(g.conf); err != nil {
		t.Fatal(err)
	}
	g.waitMetric(reloadFailed, 1)
	if !strings.Contains(g.stderr.String(), "no such file or directory") {
		t.Errorf("the removed file is not in the log:\n%s", g.stderr.String())
	}
	g.write(opsYAML(up.URL, "5/1h"))
	g.waitMetric(reloadOK, 2)

	if os.Geteuid() == 0 {
		return // root reads a file whatever its mode
	}
	tmp := g.conf + ".tmp"
	if err := os.WriteFile(tmp, []byte(opsYAML(up.URL, "6/1h")), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, g.conf); err != nil {
		t.Fatal(err)
	}
	g.waitMetric(reloadFailed, 2)
	if !strings.Contains(g.stderr.String(), "permission denied") {
		t.Errorf("the unreadable file is not in the log:\n%s", g.stderr.String())
	}
}

// TestWatchFollowsASymlink: a configuration path that is a symlink to a
// file in another directory (a checkout, a shared volume) is reloaded
// when that file is replaced there, as when the path itself is.
func TestWatchFollowsASymlink(t *testing.T) {
	real, links := t.TempDir(), t.TempDir()
	file := filepath.Join(real, "floodgate.yaml")
	if err := os.WriteFile(file, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, "floodgate.yaml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 8)
	err := watchFile(ctx, link, fileSum(link), 50*time.Millisecond, func() {
		b, _ := os.ReadFile(link)
		got <- string(b)
	}, telemetry.NewLogger(io.Discard, "info"))
	if err != nil {
		t.Fatal(err)
	}
	for i, next := range []string{"rules: [] # renamed over\n", "rules: [] # written in place\n"} {
		if i == 0 {
			tmp := filepath.Join(real, ".floodgate.yaml.tmp")
			if err := os.WriteFile(tmp, []byte(next), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, file); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(file, []byte(next), 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-got:
			if b != next {
				t.Errorf("change %d: read %q, want %q", i, b, next)
			}
		case <-time.After(30 * time.Second): // a bound, not a measure
			t.Fatalf("change %d to the linked file was never read", i)
		}
	}
}

// TestWatchReadsAFileChangedBeforeTheWatch: a file that changed between
// serve's load and the watch's start (no event comes for it) is read
// as soon as the watch begins.
func TestWatchReadsAFileChangedBeforeTheWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "floodgate.yaml")
	if err := os.WriteFile(path, []byte("rules: [] # written after the load\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, 8)
	loaded := sha256.Sum256([]byte("rules: [] # what the load read\n"))
	if err := watchFile(ctx, path, loaded, time.Hour, func() { got <- struct{}{} }, telemetry.NewLogger(io.Discard, "info")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second): // a bound, not a measure
		t.Fatal("the file changed before the watch was never read")
	}
}
