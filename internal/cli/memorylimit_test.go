package cli

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"

	"github.com/floodgate/floodgate/internal/testnet"
)

func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	envOf := func(vars map[string]string) environ {
		return environ{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		provider memlimit.Provider
		want     int64  // the soft limit while applied; -1: unchanged
		log      string // a part of the log
	}{
		{name: "a cgroup limit", provider: memlimit.Limit(1 << 30), want: 966367641,
			log: "soft_limit_bytes=966367641 cgroup_limit_bytes=1073741824"},
		{name: "GOMEMLIMIT set", env: map[string]string{"GOMEMLIMIT": "300MiB"}, provider: memlimit.Limit(1 << 30), want: -1,
			log: `msg="memory limit left to GOMEMLIMIT" gomemlimit=300MiB`},
		{name: "GOMEMLIMIT empty", env: map[string]string{"GOMEMLIMIT": ""}, provider: memlimit.Limit(1 << 30), want: 966367641},
		{name: "no limit", provider: func() (uint64, error) { return 0, memlimit.ErrNoLimit }, want: -1},
		{name: "cgroup v1's no limit", provider: memlimit.Limit(9223372036854771712), want: -1},
		{name: "not Linux", provider: func() (uint64, error) { return 0, memlimit.ErrCgroupsNotSupported }, want: -1},
		{name: "unreadable", provider: func() (uint64, error) { return 0, errors.New("open /proc/self/mountinfo: permission denied") }, want: -1,
			log: "level=WARN msg=\"memory limit: the cgroup's memory limit could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs testnet.Buffer
			debug.SetMemoryLimit(math.MaxInt64)
			restore := applyMemoryLimit(envOf(tc.env), slog.New(slog.NewTextHandler(&logs, nil)), tc.provider)
			got := debug.SetMemoryLimit(-1)
			want := tc.want
			if want < 0 {
				want = math.MaxInt64
			}
			if got != want {
				t.Errorf("soft limit %d, want %d", got, want)
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("after restore: soft limit %d, want the previous %d", got, int64(math.MaxInt64))
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q, want it to hold %q", logs.String(), tc.log)
			}
		})
	}
}

// TestServeTakesTheCgroupMemoryLimit runs the real binary in a memory
// cgroup of its own with a 256 MiB limit, as a container runtime or
// systemd's MemoryMax puts it: Go's soft limit, as /metrics reports it,
// is 90 % of that. It needs to create a cgroup (root, a writable cgroup
// file system), and skips where it cannot.
func TestServeTakesTheCgroupMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds floodgate: not in -short mode")
	}
	const limit = 256 << 20
	procs := memoryCgroup(t, limit)

	dir := t.TempDir()
	bin := filepath.Join(dir, "floodgate")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/floodgate").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	conf := filepath.Join(dir, "floodgate.yaml")
	yaml := fmt.Sprintf("listen: %s\nadmin:\n  listen: %s\nupstreams:\n  api:\n    url: http://127.0.0.1:9\nroutes:\n  - name: all\n    path: /\n    upstream: api\n", pub, adm)
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testnet.Buffer
	cmd := exec.Command("sh", "-c", `echo $$ > "$0" && exec "$1" serve --config "$2"`, procs, bin, conf)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	var soft float64 = -1
	for range 500 {
		if soft = scrapeGauge("http://"+adm+"/metrics", "go_gc_gomemlimit_bytes"); soft >= 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if want := float64(241591910); soft != want { // ⌊0.9 × 256 MiB⌋
		t.Errorf("go_gc_gomemlimit_bytes = %.0f, want 90%% of the cgroup's %d: %.0f; log:\n%s", soft, limit, want, logs.String())
	}
	if want := `"cgroup_limit_bytes":` + strconv.Itoa(limit); !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say the limit it took (%s):\n%s", want, logs.String())
	}
}

// scrapeGauge returns the value of series at url, or -1.
func scrapeGauge(url, series string) float64 {
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				return -1
			}
			return v
		}
	}
	return -1
}

// memoryCgroup makes a memory cgroup with the limit given, removed when
// the test ends, and returns its cgroup.procs file: under cgroup v2's
// root if its memory controller can be given to children, else under
// cgroup v1's memory hierarchy. It skips the test where neither can be
// made.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	name := "floodgate-test-" + strconv.Itoa(os.Getpid())
	var why []string
	try := func(parent, limitFile string, prepare func() error) string {
		if _, err := os.Stat(parent); err != nil {
			why = append(why, err.Error())
			return ""
		}
		if prepare != nil {
			if err := prepare(); err != nil {
				why = append(why, err.Error())
				return ""
			}
		}
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			why = append(why, err.Error())
			return ""
		}
		t.Cleanup(func() {
			// The cgroup can go once its process has: retry briefly.
			for range 100 {
				if os.Remove(dir) == nil {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
		if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			why = append(why, err.Error())
			return ""
		}
		return filepath.Join(dir, "cgroup.procs")
	}
	if v2 := cgroup2Mount(); v2 != "" {
		if p := try(v2, "memory.max", func() error {
			return os.WriteFile(filepath.Join(v2, "cgroup.subtree_control"), []byte("+memory"), 0o644)
		}); p != "" {
			return p
		}
	}
	if p := try("/sys/fs/cgroup/memory", "memory.limit_in_bytes", nil); p != "" {
		return p
	}
	t.Skipf("cannot make a memory cgroup here (root and a writable cgroup file system are needed): %s", strings.Join(why, "; "))
	return ""
}

// cgroup2Mount returns where the cgroup v2 file system is mounted, or "".
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID parent major:minor root mount-point options ... - type source ...
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4]
			}
		}
	}
	return ""
}
