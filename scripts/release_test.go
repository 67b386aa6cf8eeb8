// Package scripts holds the tests of the repository's scripts.
package scripts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelease runs scripts/release as a release would, into temporary
// directories, for linux/amd64 only unless RELEASE_TARGETS names more (a
// cross build with the profile takes minutes on a small machine), and
// checks what it made: the archive and SHA256SUMS (sha256sum -c), the
// archive's files, the unpacked binary beside it, a static binary whose `version` prints the version,
// the commit and the commit's time, and the same bytes from a second run.
func TestRelease(t *testing.T) {
	// A first build with the profile, static and trimmed, shares nothing
	// with the test builds' cache: 9 minutes on a loaded 2-core machine,
	// too close to go test's 10-minute timeout inside `go test ./...`.
	// scripts/test runs it on its own, with a longer timeout.
	if os.Getenv("FLOODGATE_RELEASE_TEST") == "" {
		t.Skip("set FLOODGATE_RELEASE_TEST=1 to build a release (scripts/test does: go test -timeout 30m -run TestRelease ./scripts/)")
	}
	for _, tool := range []string{"bash", "git", "tar", "gzip", "sha256sum", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("scripts/release needs %s: %v", tool, err)
		}
	}
	commit := strings.TrimSpace(gitOut(t, "rev-parse", "HEAD"))
	if gitOut(t, "status", "--porcelain", "--untracked-files=no") != "" {
		commit += "-dirty"
	}
	epoch, err := strconv.ParseInt(strings.TrimSpace(gitOut(t, "log", "-1", "--format=%ct", "HEAD")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	wantDate := time.Unix(epoch, 0).UTC().Format(time.RFC3339)

	targets := os.Getenv("RELEASE_TARGETS")
	if targets == "" {
		targets = "linux/amd64"
	}
	const version = "v0.1.0"
	release := func(dist string) {
		t.Helper()
		cmd := exec.Command("bash", "release", version)
		cmd.Env = append(os.Environ(), "DIST="+dist, "RELEASE_TARGETS="+targets)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/release %s: %v\n%s", version, err, out)
		}
	}
	dist := t.TempDir()
	release(dist)

	var want, binaries []string
	for _, target := range strings.Fields(targets) {
		osArch := strings.Replace(target, "/", "_", 1)
		want = append(want, "floodgate_"+version+"_"+osArch+".tar.gz")
		binaries = append(binaries, "floodgate_"+osArch)
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if wantAll := append(append(slices.Clone(want), binaries...), "SHA256SUMS"); !sameSet(got, wantAll) {
		t.Fatalf("dist holds %v, want %v", got, wantAll)
	}
	check := exec.Command("sha256sum", "-c", "SHA256SUMS")
	check.Dir = dist
	if out, err := check.CombinedOutput(); err != nil || strings.Count(string(out), ": OK\n") != len(want) {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}

	for _, archive := range want {
		name := strings.TrimSuffix(archive, ".tar.gz")
		files := untar(t, filepath.Join(dist, archive))
		var names []string
		for n := range files {
			names = append(names, n)
		}
		if !sameSet(names, []string{name + "/floodgate", name + "/README.md"}) {
			t.Errorf("%s holds %v, want the binary and README.md", archive, names)
		}
		bin := files[name+"/floodgate"]
		checkStatic(t, archive, bin)
		// The unpacked copy, for the Dockerfile, is the same binary.
		osArch := strings.TrimPrefix(name, "floodgate_"+version+"_")
		if unpacked, err := os.ReadFile(filepath.Join(dist, "floodgate_"+osArch)); err != nil || !bytes.Equal(unpacked, bin) {
			t.Errorf("dist/floodgate_%s is not the archive's binary (%v)", osArch, err)
		}
		if !strings.HasSuffix(name, "_"+runtime.GOOS+"_"+runtime.GOARCH) {
			continue
		}
		exe := filepath.Join(t.TempDir(), "floodgate")
		if err := os.WriteFile(exe, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(exe, "version").Output()
		if err != nil || !strings.HasPrefix(string(out), "floodgate "+version+"\n") || !strings.Contains(string(out), commit) {
			t.Errorf("%s version: %v\n%s\nwant %s and commit %s", archive, err, out, version, commit)
		}
		out, err = exec.Command(exe, "version", "--json").Output()
		var info map[string]string
		if err == nil {
			err = json.Unmarshal(out, &info)
		}
		if err != nil || info["version"] != version || info["commit"] != commit || info["date"] != wantDate || info["go"] == "" {
			t.Errorf("%s version --json = %s (%v), want version %s, commit %s, date %s", archive, out, err, version, commit, wantDate)
		}
		if file, err := exec.LookPath("file"); err == nil {
			out, _ := exec.Command(file, exe).Output()
			if !strings.Contains(string(out), "statically linked") {
				t.Errorf("file %s: %s, want statically linked", archive, out)
			}
		}
	}

	// The same commit and Go make the same archives.
	again := t.TempDir()
	release(again)
	first, _ := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	second, _ := os.ReadFile(filepath.Join(again, "SHA256SUMS"))
	if !bytes.Equal(first, second) {
		t.Errorf("two runs made different archives:\n%s\n%s", first, second)
	}
}

// checkStatic fails unless bin is an executable that needs no dynamic
// loader: no PT_INTERP program header, no dynamic section. Mach-O
// binaries (darwin) are not checked: Go links them against libSystem,
// as Apple requires.
func checkStatic(t *testing.T, archive string, bin []byte) {
	t.Helper()
	if !strings.Contains(archive, "_linux_") {
		return
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Errorf("%s: the binary is not ELF: %v", archive, err)
		return
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s: the binary has a %v program header: it is dynamically linked", archive, p.Type)
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		t.Errorf("%s: the binary has a .dynamic section", archive)
	}
}

// untar returns the regular files of a .tar.gz by name.
func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: %s is owned by %d:%d, want 0:0", path, h.Name, h.Uid, h.Gid)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
	}
	return string(out)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
