// Package version reports what floodgate binary this is: its version, the
// commit it was built from, when, and with which Go.
//
// scripts/release stamps the first three at link time:
//
//	-ldflags "-X github.com/floodgate/floodgate/internal/version.Version=v1.2.3
//	          -X github.com/floodgate/floodgate/internal/version.Commit=<sha>
//	          -X github.com/floodgate/floodgate/internal/version.Date=<RFC 3339>"
//
// Unstamped (`go build`, `go install …@v1.2.3`), they come from the build
// information Go records: the module version and the VCS revision and time.
package version

import (
	"runtime"
	"runtime/debug"
)

// Stamped at link time by scripts/release; empty otherwise.
var (
	Version = "" // the release, such as v1.2.3
	Commit  = "" // the full commit hash, "-dirty" appended for a modified tree
	Date    = "" // the commit's time, RFC 3339 in UTC
)

// Info describes a build. Its JSON form is `floodgate version --json`'s.
type Info struct {
	Version string `json:"version"` // v1.2.3, "devel" or "devel-<rev>"
	Commit  string `json:"commit"`  // empty when unknown
	Date    string `json:"date"`    // empty when unknown
	Go      string `json:"go"`      // runtime.Version()
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

// Get returns the stamped values, filling what was not stamped from the
// build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return get(Version, Commit, Date, bi)
}

func get(version, commit, date string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, Date: date, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	var rev, vtime string
	dirty := false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				vtime = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if in.Commit == "" && rev != "" {
		in.Commit = rev
		if dirty {
			in.Commit += "-dirty"
		}
	}
	if in.Date == "" {
		in.Date = vtime
	}
	if in.Version != "" {
		return in
	}
	// `go install …@v1.2.3` records the module version; a build in a
	// checkout records "(devel)" or a pseudo-version.
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
			return in
		}
	}
	in.Version = "devel"
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		in.Version += "-" + rev
		if dirty {
			in.Version += "-dirty"
		}
	}
	return in
}

// String returns the version alone: v1.2.3, or "devel-<rev>" when built
// from a checkout, or "devel".
func String() string { return Get().Version }
