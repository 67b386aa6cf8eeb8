package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/floodgate/floodgate/internal/version"
)

func init() {
	register("version", 90, "[--json]", runVersion)
}

func runVersion(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "version", "[--json]")
	asJSON := fs.Bool("json", false, "print version, commit, date, go, os and arch as a JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	in := version.Get()
	if *asJSON {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(env.stdout, "floodgate %s\n", in.Version)
	fmt.Fprintf(env.stdout, "commit:  %s\n", cmp.Or(in.Commit, "unknown"))
	fmt.Fprintf(env.stdout, "built:   %s\n", cmp.Or(in.Date, "unknown"))
	fmt.Fprintf(env.stdout, "go:      %s %s/%s\n", in.Go, in.OS, in.Arch)
	return nil
}
