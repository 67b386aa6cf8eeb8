package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/floodgate/floodgate/internal/version"
)

func init() {
	register("version", 90, "", runVersion)
}

func runVersion(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "version", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "floodgate %s (%s, %s/%s)\n", version.String(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
