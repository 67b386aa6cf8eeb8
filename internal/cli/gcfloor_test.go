package cli

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/heapfloor"
	"github.com/floodgate/floodgate/internal/testnet"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"0", 0}, {"off", 0}, {"1", 1}, {"4096", 4096},
		{"32MiB", 32 << 20}, {"1KiB", 1 << 10}, {"2GiB", 2 << 30}, {"64GiB", 64 << 30},
		{"0MiB", 0}, {"007MiB", 7 << 20},
	} {
		if got, err := parseBytes(tc.in); err != nil || got != tc.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", " ", "MiB", "32 MiB", " 32MiB", "32MiB ", "32mib", "32MB", "32M", "32m", "-1", "+1",
		"1.5MiB", "0x10", "1e6", "65GiB", "65537MiB", "68719476737", "99999999999999999999",
		"18446744073709551616", "32MiBMiB", "MiB32", "３２MiB", "32\x00MiB", "32MiB\n", "OFF", "none",
	} {
		if n, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, n)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"0", "off", "32MiB", "64GiB", "65GiB", "1KiB", "x", "", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseBytes(s)
		if err != nil {
			return
		}
		if n > maxGCFloor {
			t.Fatalf("parseBytes(%q) = %d, over the 64 GiB bound", s, n)
		}
		// What it read is written back and read again the same.
		if m, err := parseBytes(formatBytes(n)); err != nil || m != n {
			t.Fatalf("parseBytes(%q) = %d; formatBytes %q reads back as %d, %v", s, n, formatBytes(n), m, err)
		}
	})
}

func TestStartGCFloor(t *testing.T) {
	var logs testnet.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	envOf := func(vars map[string]string) environ {
		return environ{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	}

	stop, err := startGCFloor(envOf(nil), logger)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "heap_floor=32MiB") || heapfloor.Floor() != 32<<20 {
		t.Errorf("default floor: %d, logged:\n%s", heapfloor.Floor(), logs.String())
	}
	stop()

	if _, err := startGCFloor(envOf(map[string]string{"FLOODGATE_GC_HEAP_FLOOR": "32MB"}), logger); err == nil ||
		!strings.Contains(err.Error(), "FLOODGATE_GC_HEAP_FLOOR") {
		t.Errorf("a bad floor: %v, want an error naming FLOODGATE_GC_HEAP_FLOOR", err)
	}

	before := heapfloor.Floor()
	stop, err = startGCFloor(envOf(map[string]string{"GOGC": "200", "FLOODGATE_GC_HEAP_FLOOR": "1GiB"}), logger)
	if err != nil {
		t.Fatal(err)
	}
	if heapfloor.Floor() != before || !strings.Contains(logs.String(), "left to GOGC") {
		t.Errorf("GOGC set: floor %d, logged:\n%s", heapfloor.Floor(), logs.String())
	}
	stop()
}

// A bad FLOODGATE_GC_HEAP_FLOOR stops serve before it listens.
func TestServeRefusesBadGCFloor(t *testing.T) {
	code, _, stderr := run(t, map[string]string{
		"FLOODGATE_LISTEN":        testnet.FreeAddr(t),
		"FLOODGATE_ADMIN_LISTEN":  "off",
		"FLOODGATE_GC_HEAP_FLOOR": "lots",
	}, "serve", "--config", "../../examples/mavedb.yaml")
	if code == 0 || !strings.Contains(stderr, `FLOODGATE_GC_HEAP_FLOOR: "lots" is not a size`) {
		t.Errorf("exit %d, stderr %q; want a failure naming the variable", code, stderr)
	}
}
