package redistest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill the server when the test binary
// dies, so that no server outlives a test run killed by a timeout.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
