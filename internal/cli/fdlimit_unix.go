//go:build unix

package cli

import "syscall"

// openFilesLimit returns the process's limit on open descriptors (Go
// raises the soft limit to the hard one at start-up), or 0 if unknown.
func openFilesLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	return l.Cur
}
