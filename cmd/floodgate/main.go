// Command floodgate is a rate-limiting gateway for HTTP APIs.
// See README.md, or run `floodgate help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/floodgate/floodgate/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal starts the drain; a second one ends the process at
	// once, by the signal's default action.
	second := make(chan os.Signal, 2)
	signal.Notify(second, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-second
		sig := <-second
		signal.Reset(sig)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Signal(sig)
		}
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
