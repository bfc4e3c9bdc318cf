// Package cli is the `chio` command: each subcommand is a file here with
// its own test. Main returns the process exit code.
//
// Conventions every command keeps: help (`chio help CMD`, `CMD --help`)
// goes to stdout with exit 0; a usage mistake is one line on stderr naming
// the problem, exit 2 (so is a flag that takes one value given twice,
// flag_once.go); the global flags --url and --output may come before or
// after the command.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
)

// Exit codes (SPEC §7 and §9; stable for scripts). ExitInterrupted and
// ExitTerminated (130, 143) are in interrupt.go.
const (
	ExitOK         = 0
	ExitError      = 1
	ExitUsage      = 2
	ExitPending    = 3
	ExitDenied     = 4
	ExitTimedOut   = 5
	ExitToolFailed = 6 // allowed and dispatched, but the tool reported an error
	// ExitVoteRecorded: `chio approval approve/deny` (and nothing else): the
	// vote IS recorded, but a step after it failed (chiod's 500
	// vote_recorded); the approved call is not finished yet. Do not vote
	// again.
	ExitVoteRecorded = 7
)

const exitCodesHelp = "exit codes: 0 ok/allowed, 1 error, 2 usage, 3 pending approval, 4 denied, 5 timed out, 6 allowed but no result (the tool failed, not delivered, or outcome unknown), 7 vote recorded but the approved call not finished (approval approve/deny), 130/143 interrupted by SIGINT/SIGTERM (call, await: stderr names the request and how to resume)"

// Env is the command's world: arguments, streams and environment.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string

	flags  *flag.FlagSet // the running command's flags (completion reads them)
	helped bool          // the command printed its help instead of running
}

// command is one `chio` subcommand. name is its words ("approval show");
// args names its positional arguments for help ("ID").
type command struct {
	name, args, summary string
	run                 func(e *Env, args []string) int
}

var commands = map[string]command{}

// register adds a command. spec is the command's words followed by its
// positional arguments in upper case: "approval show ID", "call SERVER TOOL".
func register(spec, summary string, run func(*Env, []string) int) {
	var words []string
	f := strings.Fields(spec)
	for len(f) > 0 && isWord(f[0]) {
		words, f = append(words, f[0]), f[1:]
	}
	name := strings.Join(words, " ")
	if name == "" || commands[name].run != nil {
		panic("cli: bad or duplicate command " + spec)
	}
	commands[name] = command{name: name, args: strings.Join(f, " "), summary: summary, run: run}
}

func isWord(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || i > 0 && r == '-') {
			return false
		}
	}
	return s != ""
}

// maxWords is the longest command name ("approval batch create").
const maxWords = 3

// globalFlags take a value and may precede the command.
var globalFlags = map[string]bool{"url": true, "output": true}

// Main runs `chio args...`.
func Main(args []string, e *Env) int {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	global, rest, help, err := splitGlobal(args)
	switch {
	case err != nil:
		fmt.Fprintf(e.Stderr, "chio: %v (see 'chio help')\n", err)
		return ExitUsage
	case help:
		usage(e.Stdout)
		return ExitOK
	case len(rest) == 0:
		usage(e.Stderr)
		fmt.Fprintln(e.Stderr, "\nchio: missing command")
		return ExitUsage
	case rest[0] == "help":
		if len(rest) == 1 {
			usage(e.Stdout)
			return ExitOK
		}
		rest = slices.Concat(rest[1:], []string{"--help"})
	}
	c, n := lookup(rest)
	if c == nil {
		return unknown(e, rest)
	}
	// Global flags given before the command are the command's own flags
	// (after it, its flag set parses them anyway); one it does not take,
	// such as --url for keygen, does not concern it.
	code := c.run(e, slices.Concat(globalFor(*c, global), rest[n:]))
	if e.helped {
		return ExitOK
	}
	return code
}

// splitGlobal takes the global flags that precede the command. help
// reports -h / --help with no command after it.
func splitGlobal(args []string) (global, rest []string, help bool, err error) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" {
		a := args[0]
		if a == "--" {
			return global, args[1:], false, nil
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "h" || name == "help":
			if len(args) == 1 {
				return global, nil, true, nil
			}
			// `chio --help call` shows call's help.
			return global, slices.Concat(args[1:], []string{"--help"}), false, nil
		case !globalFlags[name]:
			return nil, nil, false, fmt.Errorf("unknown global flag %s (global flags: --url, --output)", a)
		case hasVal:
			global, args = append(global, "--"+name, val), args[1:]
		case len(args) < 2:
			return nil, nil, false, fmt.Errorf("flag --%s needs a value", name)
		default:
			global, args = append(global, "--"+name, args[1]), args[2:]
		}
	}
	return global, args, false, nil
}

// globalFor keeps the global flags (name, value pairs) that c defines.
func globalFor(c command, global []string) []string {
	if len(global) == 0 {
		return nil
	}
	defined := commandFlags(c)
	var out []string
	for i := 0; i+1 < len(global); i += 2 {
		if slices.Contains(defined, global[i]) {
			out = append(out, global[i], global[i+1])
		}
	}
	return out
}

// lookup finds the longest command named by args' first words.
func lookup(args []string) (*command, int) {
	for n := min(maxWords, len(args)); n >= 1; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return &c, n
		}
	}
	return nil, 0
}

// unknown answers words that name no command: a group ("approval") lists
// its commands; anything else is an unknown command.
func unknown(e *Env, args []string) int {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			break
		}
		words = append(words, a)
	}
	// The longest prefix of words that is a group of commands.
	for n := min(len(words), maxWords-1); n >= 1; n-- {
		group := strings.Join(words[:n], " ")
		sub := subcommands(group)
		if len(sub) == 0 {
			continue
		}
		wantsHelp := len(args) > n && (args[n] == "-h" || args[n] == "--help" || args[n] == "-help")
		if wantsHelp {
			listCommands(e.Stdout, "usage: chio "+group+" COMMAND [flags]\n\ncommands:", sub)
			return ExitOK
		}
		if len(words) == n {
			fmt.Fprintf(e.Stderr, "chio %s: missing command; one of: %s\n", group, strings.Join(nextWords(group, sub), ", "))
		} else {
			fmt.Fprintf(e.Stderr, "chio %s: unknown command %q; one of: %s\n", group, words[n], strings.Join(nextWords(group, sub), ", "))
		}
		return ExitUsage
	}
	name := args[0]
	if len(words) > 0 {
		name = words[0]
	}
	fmt.Fprintf(e.Stderr, "chio: unknown command %q (see 'chio help')\n", name)
	return ExitUsage
}

// subcommands lists the commands under group, sorted.
func subcommands(group string) []command {
	var out []command
	for n, c := range commands {
		if strings.HasPrefix(n, group+" ") {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// nextWords are the words that may follow group ("approval" → approve,
// batch, cancel, …).
func nextWords(group string, cs []command) []string {
	var out []string
	for _, c := range cs {
		w, _, _ := strings.Cut(strings.TrimPrefix(c.name, group+" "), " ")
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

func usage(w io.Writer) {
	all := make([]command, 0, len(commands))
	for _, c := range commands {
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	fmt.Fprintln(w, "chio: call tools through the chio kernel, decide approvals, audit receipts.")
	fmt.Fprintln(w)
	listCommands(w, "usage: chio [--url URL] [--output table|json|jsonl] COMMAND [ARGS] [flags]\n\ncommands:", all)
	fmt.Fprint(w, `
global flags (before or after the command):
  --url URL         chiod's URL (env CHIO_URL; default http://127.0.0.1:7420)
  --output FORMAT   table, json or jsonl, for commands that print results

environment: CHIO_URL, CHIO_ADMIN_TOKEN, CHIO_READ_TOKEN (bearer tokens),
CHIO_KEY, CHIO_CAPABILITY (the agent's key and capability files)

`+exitCodesHelp+`
'chio help COMMAND' or 'chio COMMAND --help' shows a command's arguments and flags.
`)
}

func listCommands(w io.Writer, head string, cs []command) {
	fmt.Fprintln(w, head)
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name)+len(c.args)+1)
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
}

// newFlags is the flag set of command name. Its help (on -h / --help)
// goes to stdout and names the positional arguments; parse errors are
// reported by parse as one line on stderr.
func newFlags(e *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("chio "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		e.helped = true
		c := commands[name]
		fmt.Fprintf(e.Stdout, "usage: chio %s [flags]\n\n%s\n", strings.TrimSpace(name+" "+c.args), c.summary)
		printFlags(e.Stdout, fs)
	}
	e.flags = fs
	return fs
}

// printFlags lists a flag set's flags, spelled --name as the docs spell them.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		kind, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + strings.ToUpper(kind)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "[]" {
			text += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, text)
	})
}

// parse parses flags that may be interleaved with positional arguments
// (`chio call demo echo --args …`), returning the positionals. On -h it
// prints the command's help; on a bad flag, one line naming it. Either way
// the caller stops with the returned error.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	out, help := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = help }()
	restore := refuseRepeats(fs)
	defer restore()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			restore()
			if errors.Is(err, flag.ErrHelp) {
				help()
			} else {
				fmt.Fprintf(out, "%s: %s (see '%s --help')\n", fs.Name(), flagError(err), fs.Name())
			}
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

// flagError restates the flag package's messages with flags spelled
// --name, as help and the docs spell them.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimLeft(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + strings.TrimLeft(name, "-") + " needs a value"
	}
	if rest, ok := strings.CutPrefix(msg, "invalid boolean flag "); ok {
		return "invalid boolean flag --" + rest
	}
	return strings.Replace(msg, " for flag -", " for flag --", 1)
}

// wantArgs checks the number of positional arguments of command name.
func wantArgs(name string, pos []string, n int) error {
	c := commands[name]
	want := strings.Fields(c.args)
	switch {
	case len(pos) < n:
		return usageError(fmt.Sprintf("chio %s: missing %s (usage: chio %s %s [flags])", name, strings.Join(want[len(pos):min(n, len(want))], " "), name, c.args))
	case len(pos) > n:
		return usageError(fmt.Sprintf("chio %s: unexpected argument %q (usage: chio %s [flags])", name, pos[n], strings.TrimSpace(name+" "+c.args)))
	}
	// An empty argument is most often an unset shell variable ("$CAP_ID"):
	// said so here, not sent to chiod as a path it cannot route.
	for i, a := range pos {
		if a == "" {
			arg := "an argument"
			if i < len(want) {
				arg = want[i]
			}
			return usageError(fmt.Sprintf("chio %s: %s is empty (usage: chio %s [flags])", name, arg, strings.TrimSpace(name+" "+c.args)))
		}
	}
	return nil
}

// fail prints an error and returns ExitError (ExitUsage for a usageError).
func fail(e *Env, err error) int {
	// Errors quote what servers and files sent (a checkpoint's kernel_key,
	// an API error's message): each line is shown escaped, so no escape
	// sequence there can rewrite what the terminal shows above or below.
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = shown(l)
	}
	if msg := strings.Join(lines, "\n"); strings.HasPrefix(msg, "chio ") {
		fmt.Fprintln(e.Stderr, msg) // already names the command
	} else {
		fmt.Fprintln(e.Stderr, "chio:", msg)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	return ExitError
}

// usageErr is a usage mistake of command name: one line naming it.
func usageErr(name, format string, args ...any) error {
	return usageError("chio " + name + ": " + fmt.Sprintf(format, args...))
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
