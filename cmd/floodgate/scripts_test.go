package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestScriptsTest runs scripts/test with bash in a scratch tree, with
// stand-ins for go, gofmt and git that record how they are called, and a
// PATH without redis-server, chromium or promtool: the full run names
// what is missing, and every phase with its time; --quick runs the tests
// without the race detector, with the browser checks skipped.
func TestScriptsTest(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := os.ReadFile("../../scripts/test")
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (code int, out, calls string) {
		t.Helper()
		root := t.TempDir()
		bin := filepath.Join(root, "bin")
		for _, d := range []string{bin, filepath.Join(root, "scripts")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "scripts", "test"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(root, "calls")
		stub := func(name, body string) {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!"+bash+"\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		stub("go", `echo "go $* (FLOODGATE_SKIP_BROWSER=${FLOODGATE_SKIP_BROWSER:-})" >>`+log+`; [ "$1" = version ] && echo "go version stand-in"; exit 0`)
		stub("gofmt", "exit 0")
		stub("git", "exit 1")
		stub("id", "echo 1000") // not root: nothing is installed
		for _, tool := range []string{"dirname", "date", "chmod", "rm", "find", "cat"} {
			p, err := exec.LookPath(tool)
			if err != nil {
				t.Skipf("no %s", tool)
			}
			if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bash, append([]string{filepath.Join(root, "scripts", "test")}, args...)...)
		cmd.Env = []string{"PATH=" + bin, "HOME=" + root}
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		c, _ := os.ReadFile(log)
		return code, b.String(), string(c)
	}
	elapsed := func(t *testing.T, out string, phases ...string) {
		t.Helper()
		for _, p := range phases {
			if !regexp.MustCompile(`(?m)^== ` + regexp.QuoteMeta(p) + `.*\n(?s:.*)^   ` + regexp.QuoteMeta(p) + `.*: \d+ s$`).MatchString(out) {
				t.Errorf("phase %q is not announced and timed:\n%s", p, out)
			}
		}
	}

	code, out, calls := run()
	if code != 0 {
		t.Fatalf("full run: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "missing and not installable here (needs root and apt-get): redis-server redis-tools chromium prometheus") {
		t.Errorf("full run does not name what it would install:\n%s", out)
	}
	elapsed(t, out, "gofmt", "go vet", "go test -race", "allocation budgets", "go build")
	for _, want := range []string{"go vet ./...", "go test -race -count=1 ./... (FLOODGATE_SKIP_BROWSER=)", "go build -o /dev/null ./cmd/floodgate"} {
		if !strings.Contains(calls, want) {
			t.Errorf("full run did not call %q; calls:\n%s", want, calls)
		}
	}
	if !regexp.MustCompile(`(?m)^== all tests passed in \d+ s$`).MatchString(out) {
		t.Errorf("full run gives no total time:\n%s", out)
	}

	code, out, calls = run("--quick")
	if code != 0 {
		t.Fatalf("--quick: exit %d\n%s", code, out)
	}
	elapsed(t, out, "gofmt", "go vet", "go test (no race detector")
	if !strings.Contains(calls, "go test -count=1 ./... (FLOODGATE_SKIP_BROWSER=1)") || strings.Contains(calls, "-race") || strings.Contains(out, "installable") {
		t.Errorf("--quick: calls\n%s\noutput\n%s", calls, out)
	}

	if code, out, _ := run("--bogus"); code != 2 || !strings.Contains(out, "usage: bash scripts/test [--quick]") {
		t.Errorf("--bogus: exit %d\n%s", code, out)
	}
}
