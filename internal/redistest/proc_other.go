//go:build !linux

package redistest

import "os/exec"

// setDeathSignal does nothing outside Linux: servers are still killed by
// the tests' cleanups.
func setDeathSignal(*exec.Cmd) {}
