package replay

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/logs"
)

// TestPipeAmongFiles: a log named by a path that is not a regular file
// (a shell's process substitution, <(zcat access.log.2.gz), a FIFO) can be
// read only once, as standard input: among several files, dating it by its
// first records must not lose them.
func TestPipeAmongFiles(t *testing.T) {
	lines := elasticLines(t)
	dir := t.TempDir()
	first := writeLog(t, dir, "first.log", lines[:5000])
	second, err := os.ReadFile(writeLog(t, dir, "second.log", lines[5000:]))
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() {
		pw.Write(second)
		pw.Close()
	}()
	pipe := fmt.Sprintf("/proc/self/fd/%d", pr.Fd())

	set, err := AdHocRules([]string{"40/1m", "20/1m"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, elastic)
	got := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, first, pipe)
	if got.Lines != 10000 || got.Parsed != 9999 || got.Requests != 9999 {
		t.Errorf("lines %d, parsed %d, requests %d; want 10000, 9999, 9999", got.Lines, got.Parsed, got.Requests)
	}
	if diff := cmp.Diff(got.Rules, want.Rules); diff != "" {
		t.Errorf("rules (-got +want, the whole log as one file):\n%s", diff)
	}
}
