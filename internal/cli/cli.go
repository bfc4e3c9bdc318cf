// Package cli is the `chio` command: each subcommand is a file here with
// its own test. Main returns the process exit code.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes (SPEC §7; stable for scripts).
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitPending  = 3
	ExitDenied   = 4
	ExitTimedOut = 5
)

// Env is the command's world: arguments, streams and environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

type command struct {
	summary string
	run     func(e *Env, args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(*Env, []string) int) {
	commands[name] = command{summary, run}
}

// Main runs `chio args...`.
func Main(args []string, e *Env) int {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	// Two-word commands ("policy check") are looked up first.
	for n := min(2, len(args)); n >= 1; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return c.run(e, args[n:])
		}
	}
	usage(e.Stderr)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return ExitOK
	}
	return ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: chio COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-22s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nexit codes: 0 ok/allowed, 1 error, 2 usage, 3 pending approval, 4 denied, 5 timed out")
}

// parse parses flags that may be interleaved with positional arguments
// (`chio call demo echo --args …`), returning the positionals.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func newFlags(e *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("chio "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	return fs
}

// fail prints an error and returns ExitError.
func fail(e *Env, err error) int {
	fmt.Fprintln(e.Stderr, "chio:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return ExitError
}

type usageError string

func (u usageError) Error() string { return string(u) }

// envOr returns the flag value, else the environment's.
func envOr(e *Env, v, name string) string {
	if v != "" {
		return v
	}
	return e.Getenv(name)
}
