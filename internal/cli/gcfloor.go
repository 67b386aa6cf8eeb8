package cli

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/floodgate/floodgate/internal/heapfloor"
)

// defaultGCFloor is the least heap growth between two collections unless
// FLOODGATE_GC_HEAP_FLOOR says otherwise (package heapfloor).
const defaultGCFloor = 32 << 20

// maxGCFloor bounds FLOODGATE_GC_HEAP_FLOOR: more is a typo.
const maxGCFloor = 64 << 30

// startGCFloor applies FLOODGATE_GC_HEAP_FLOOR (default 32MiB; 0 or off:
// Go's defaults) unless GOGC is set, which is then the operator's choice.
// It returns the function that undoes it.
func startGCFloor(env environ, logger *slog.Logger) (stop func(), err error) {
	if v, ok := env.lookup("GOGC"); ok && v != "" {
		logger.Info("garbage collector left to GOGC", "gogc", v)
		return func() {}, nil
	}
	floor := uint64(defaultGCFloor)
	if v, ok := env.lookup("FLOODGATE_GC_HEAP_FLOOR"); ok && v != "" {
		if floor, err = parseBytes(v); err != nil {
			return nil, fmt.Errorf("FLOODGATE_GC_HEAP_FLOOR: %w", err)
		}
	}
	if floor == 0 {
		return func() {}, nil
	}
	heapfloor.Start(floor)
	logger.Info("garbage collector: at most one collection per heap_floor of allocation while the live heap is smaller",
		"heap_floor", formatBytes(floor))
	return heapfloor.Stop, nil
}

// parseBytes reads a size: a whole number of bytes, optionally followed
// by KiB, MiB or GiB; "0" and "off" are 0. At most 64 GiB.
func parseBytes(s string) (uint64, error) {
	if s == "off" {
		return 0, nil
	}
	num, mult := s, uint64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	if num == "" || len(num) > 12 || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a size (a whole number of bytes, or of KiB, MiB or GiB: 32MiB; 0 or off for none)", s)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > maxGCFloor/mult {
		return 0, fmt.Errorf("%q is more than 64GiB", s)
	}
	return n * mult, nil
}

// sizeUnits are the suffixes of a size, largest first.
var sizeUnits = []struct {
	suffix string
	mult   uint64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// formatBytes writes a size as parseBytes reads it.
func formatBytes(n uint64) string {
	for _, u := range sizeUnits {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatUint(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatUint(n, 10)
}
