// Command gwprof runs `floodgate serve` (the product's own code path,
// through internal/cli) under runtime/pprof's CPU profiler, so that the
// gateway can be profiled under wrk's load without adding a profiling
// endpoint to the product. It stops on SIGINT or SIGTERM, or after
// -duration, and writes the profile to -cpuprofile (and, with -memprofile,
// every allocation made to that file: slower, for counting allocations):
//
//	GOMAXPROCS=1 go run ./bench/gwprof -cpuprofile cpu.out -- serve --config bench/mavedb-bench.yaml
//	go tool pprof -top cpu.out
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/cli"
)

func main() {
	out := flag.String("cpuprofile", "cpu.out", "where to write the CPU profile")
	d := flag.Duration("duration", 10*time.Minute, "stop after this long at most")
	mem := flag.String("memprofile", "", "also write an allocation profile (every allocation sampled) here")
	tr := flag.String("trace", "", "also write an execution trace (runtime/trace) here: go tool trace reads it")
	flag.Parse()
	if *mem != "" {
		runtime.MemProfileRate = 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *d)
	defer cancel()
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		os.Exit(1)
	}
	stopTrace, err := startTrace(*tr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		os.Exit(1)
	}
	code := cli.Run(ctx, flag.Args(), os.Stdout, os.Stderr)
	pprof.StopCPUProfile()
	if err := stopTrace(); err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		code = 1
	}
	if *mem != "" {
		if err := writeHeapProfile(*mem); err != nil {
			fmt.Fprintln(os.Stderr, "gwprof:", err)
			code = 1
		}
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "gwprof:", err)
		code = 1
	}
	os.Exit(code)
}

// startTrace starts runtime/trace writing to name, if name is not empty,
// and returns what stops it and closes the file.
func startTrace(name string) (stop func() error, err error) {
	if name == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		trace.Stop()
		return f.Close()
	}, nil
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
