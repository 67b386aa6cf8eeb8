package cli

import (
	"errors"
	"log/slog"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryLimitShare is the part of a container's memory limit given to Go's
// heap as its soft limit: the rest is for what the limit counts and the
// heap does not (goroutine stacks, the runtime's own, the kernel's socket
// buffers charged to the container).
const memoryLimitShare = 0.9

// applyMemoryLimit sets Go's soft memory limit to 90 % of the memory limit
// of the process's cgroup (a container's, a systemd unit's MemoryMax),
// unless GOMEMLIMIT is set, which is then the operator's choice. Go's
// runtime does not read that limit itself: without a soft limit the
// collector paces itself by GOGC and the heap floor alone, and a heap that
// grows past the container's limit is killed by the kernel instead of
// collected harder. It returns the function that puts the previous limit
// back.
func applyMemoryLimit(env environ, logger *slog.Logger, container memlimit.Provider) (restore func()) {
	if v, ok := env.lookup("GOMEMLIMIT"); ok && v != "" {
		logger.Info("memory limit left to GOMEMLIMIT", "gomemlimit", v)
		return func() {}
	}
	limit, err := container()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit), errors.Is(err, memlimit.ErrCgroupsNotSupported):
		return func() {}
	case err != nil:
		logger.Warn("memory limit: the cgroup's memory limit could not be read; set GOMEMLIMIT if the process has one",
			"error", err)
		return func() {}
	}
	soft := int64(float64(limit) * memoryLimitShare)
	if limit > 1<<62 || soft <= 0 {
		return func() {} // no limit, as cgroup v1 writes it
	}
	prev := debug.SetMemoryLimit(soft)
	logger.Info("memory limit: the collector works harder as the heap nears 90% of the cgroup's memory limit",
		"soft_limit_bytes", soft, "cgroup_limit_bytes", limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup (v1 or
// v2, the nearest limit up its hierarchy).
var cgroupMemoryLimit memlimit.Provider = memlimit.FromCgroup
