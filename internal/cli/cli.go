// Package cli implements floodgate's command line: one file per subcommand.
package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/floodgate/floodgate/internal/config"
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
	switch c, ok := commands[cmd]; {
	case ok:
		err = c.run(ctx, env, rest)
	case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
		usage(stdout)
		return 0
	case cmd == "--version" || cmd == "-version":
		err = commands["version"].run(ctx, env, nil)
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
		// A URL given on the command line (--store) may carry a password.
		fmt.Fprintf(stderr, "floodgate %s: %s\n", cmd, config.MaskURLCredentials(ue.Error()))
		return 2
	case errors.Is(err, errUsageReported):
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "floodgate %s: %s\n", cmd, config.MaskURLCredentials(err.Error()))
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

// A command is one subcommand. Each lives in its own file and registers
// itself in an init function, so adding one touches no other file.
type command struct {
	run      func(ctx context.Context, env environ, args []string) error
	synopsis string // flags and arguments, for usage
	order    int    // position in usage
}

var commands = map[string]command{}

func register(name string, order int, synopsis string, run func(context.Context, environ, []string) error) {
	commands[name] = command{run: run, synopsis: synopsis, order: order}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "floodgate — a rate-limiting gateway for HTTP APIs\n\nUsage:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(commands[a].order-commands[b].order, strings.Compare(a, b)) })
	for _, n := range names {
		fmt.Fprintf(w, "  floodgate %-9s %s\n", n, commands[n].synopsis)
	}
	fmt.Fprint(w, "\nRun 'floodgate COMMAND -h' for a command's flags. Documentation: README.md and docs/.\n")
}

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(env environ, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	errs := &noting{w: env.stderr}
	fs.SetOutput(errs)
	fs.Usage = func() {
		// Asked for (-h, -help), the usage is the answer, on standard
		// output as `floodgate help` writes it (so that it pipes into a
		// pager); after a flag's error message, on standard error with it.
		w := env.stdout
		if errs.wrote {
			w = env.stderr
		}
		errs.wrote = false
		fmt.Fprintf(w, "Usage: floodgate %s %s\n\nFlags:\n", name, synopsis)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(errs)
	}
	return fs
}

// noting is a writer that notes whether it was written to: the flag
// package writes an error message there before it calls Usage.
type noting struct {
	w     io.Writer
	wrote bool
}

func (n *noting) Write(p []byte) (int, error) {
	n.wrote = true
	return n.w.Write(p)
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
