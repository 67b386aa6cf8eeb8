// Package version reports floodgate's version.
package version

import "runtime/debug"

// Version is set at build time with
// -ldflags "-X github.com/floodgate/floodgate/internal/version.Version=v1.2.3";
// otherwise it is read from the module's build information.
var Version = ""

// String returns the version, "devel" with the VCS revision when built from
// a checkout, or "devel".
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + rev
}
