// Package cli implements floodgate's command line: one file per subcommand.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Run executes the command line args (without the program name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run1(ctx, environ{lookup: os.LookupEnv, stdout: stdout, stderr: stderr}, args)
}

func run1(ctx context.Context, env environ, args []string) int {
	stdout, stderr := env.stdout, env.stderr
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "serve":
		err = runServe(ctx, env, rest)
	case "validate":
		err = runValidate(ctx, env, rest)
	case "version", "--version", "-version":
		err = runVersion(env, rest)
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "floodgate: unknown command %q\n\n", cmd)
		usage(stderr)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "floodgate %s: %v\n", cmd, ue.error)
		return 2
	case errors.Is(err, errUsageReported):
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "floodgate %s: %v\n", cmd, err)
		return 1
	}
}

// environ is what a subcommand may touch of the outside world; tests
// replace it.
type environ struct {
	lookup         func(string) (string, bool)
	stdout, stderr io.Writer
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ error }

// errReported means the subcommand already printed why it failed;
// errUsageReported, that the flag package printed a usage error.
var (
	errReported      = errors.New("reported")
	errUsageReported = errors.New("usage reported")
)

func usage(w io.Writer) {
	fmt.Fprint(w, strings.TrimLeft(`
floodgate — a rate-limiting gateway for HTTP APIs

Usage:
  floodgate serve    --config FILE [--env NAME] [--listen ADDR] [--admin-listen ADDR] [--sample-upstream]
  floodgate validate --config FILE [--env NAME]
  floodgate version

Run 'floodgate COMMAND -h' for a command's flags. Documentation: README.md and docs/.
`, "\n"))
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(env environ, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: floodgate %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, rejecting positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsageReported
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
