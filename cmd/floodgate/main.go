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
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
