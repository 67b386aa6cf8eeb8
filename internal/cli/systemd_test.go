package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// operationsDoc holds the systemd unit operators copy.
const operationsDoc = "../../docs/operations.md"

// systemdUnit returns the unit in docs/operations.md: the ```ini block that
// starts with its path.
func systemdUnit(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	const start = "```ini\n# /etc/systemd/system/floodgate.service\n"
	_, rest, ok := bytes.Cut(doc, []byte(start))
	if !ok {
		t.Fatalf("%s: no unit starting %q", operationsDoc, start)
	}
	unit, _, ok := bytes.Cut(rest, []byte("\n```"))
	if !ok {
		t.Fatalf("%s: the unit's block does not end", operationsDoc)
	}
	return string(unit) + "\n"
}

// TestSystemdUnitInOperationsDoc checks the unit operators copy from
// docs/operations.md. systemd takes "#" as a comment only at the start of
// a line: after a setting it is part of the value, which made the unit's
// TimeoutStopSec unparsable (ignored) and its EnvironmentFile a path that
// does not exist. Where systemd-analyze is installed, systemd reads the
// unit too.
func TestSystemdUnitInOperationsDoc(t *testing.T) {
	unit := systemdUnit(t)
	settings := 0
	for n, line := range strings.Split(unit, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			t.Errorf("unit line %d: %q is not a Key=value setting", n+1, line)
			continue
		}
		if strings.Contains(value, "#") {
			t.Errorf("unit line %d: %q: systemd reads the comment as part of %s's value", n+1, line, key)
		}
		settings++
	}
	if settings < 10 {
		t.Fatalf("read %d settings from the unit; want the whole unit", settings)
	}
	for _, cmd := range []string{"ExecStartPre=/usr/local/bin/floodgate validate ", "ExecStart=/usr/local/bin/floodgate serve "} {
		if !strings.Contains(unit, "\n"+cmd) {
			t.Errorf("the unit has no line starting %q", cmd)
		}
	}
	// docs/production.md's way: a file written by init, in the unit. Its
	// ExecStartPre must pass on it, or the service never starts.
	_, pre, _ := strings.Cut(unit, "\nExecStartPre=/usr/local/bin/floodgate ")
	pre, _, _ = strings.Cut(pre, "\n")
	file := initFile(t)
	args, err := shellWords(strings.ReplaceAll(pre, "/etc/floodgate/floodgate.yaml", file))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := run(t, nil, args...); code != 0 {
		t.Errorf("the unit's ExecStartPre on a file written by init: exit %d\n%s", code, stderr)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit is checked by this test's reading only")
		return
	}
	// systemd-analyze verify wants the executables to exist: this test's own
	// binary stands in for floodgate.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "floodgate.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/floodgate", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	// verify exits 0 on settings it ignores; what it says about the file is
	// the finding.
	var said []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, path) {
			said = append(said, l)
		}
	}
	if err != nil || len(said) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
