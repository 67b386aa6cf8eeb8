package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGet(t *testing.T) {
	vcs := func(rev, tm, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/floodgate/floodgate", Version: "(devel)"}}
		for _, s := range []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: tm}, {Key: "vcs.modified", Value: modified}} {
			if s.Value != "" {
				bi.Settings = append(bi.Settings, s)
			}
		}
		return bi
	}
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/floodgate/floodgate", Version: "v1.4.0"}}
	const rev = "0c966c7a1b2c3d4e5f60718293a4b5c6d7e8f901"
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{
		{name: "stamped by scripts/release", version: "v0.1.0", commit: rev, date: "2026-12-01T23:00:00Z", bi: vcs("ffff", "2020-01-01T00:00:00Z", "true"),
			want: Info{Version: "v0.1.0", Commit: rev, Date: "2026-12-01T23:00:00Z"}},
		{name: "version stamped alone", version: "v0.1.0", bi: vcs(rev, "2026-12-01T23:00:00Z", "false"),
			want: Info{Version: "v0.1.0", Commit: rev, Date: "2026-12-01T23:00:00Z"}},
		{name: "go build in a checkout", bi: vcs(rev, "2026-12-01T23:00:00Z", "false"),
			want: Info{Version: "devel-0c966c7a1b2c", Commit: rev, Date: "2026-12-01T23:00:00Z"}},
		{name: "go build in a modified checkout", bi: vcs(rev, "2026-12-01T23:00:00Z", "true"),
			want: Info{Version: "devel-0c966c7a1b2c-dirty", Commit: rev + "-dirty", Date: "2026-12-01T23:00:00Z"}},
		{name: "go install at a version", bi: installed,
			want: Info{Version: "v1.4.0"}},
		{name: "no build information", bi: nil,
			want: Info{Version: "devel"}},
		{name: "no VCS information", bi: vcs("", "", ""),
			want: Info{Version: "devel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Go, tc.want.OS, tc.want.Arch = runtime.Version(), runtime.GOOS, runtime.GOARCH
			if diff := cmp.Diff(get(tc.version, tc.commit, tc.date, tc.bi), tc.want); diff != "" {
				t.Errorf("get(%q, %q, %q) (-got +want):\n%s", tc.version, tc.commit, tc.date, diff)
			}
		})
	}
}
