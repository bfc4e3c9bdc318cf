package cli

import (
	"bytes"
	"strings"
	"testing"
)

// Every command's help goes to stdout with exit 0, names its positional
// arguments and lists its flags.
func TestEveryCommandHelp(t *testing.T) {
	for name, c := range commands {
		t.Run(name, func(t *testing.T) {
			for _, args := range [][]string{
				append(strings.Fields(name), "--help"),
				append([]string{"help"}, strings.Fields(name)...),
				append(strings.Fields(name), "-h"),
			} {
				var so, se bytes.Buffer
				code := Main(args, &Env{Stdout: &so, Stderr: &se, Getenv: func(string) string { return "" }})
				want := "usage: chio " + strings.TrimSpace(name+" "+c.args) + " [flags]\n"
				if code != ExitOK || se.Len() != 0 || !strings.HasPrefix(so.String(), want) || !strings.Contains(so.String(), c.summary) {
					t.Fatalf("%q: exit %d\nstdout %q\nstderr %q", args, code, so.String(), se.String())
				}
				if len(commandFlags(c)) > 0 && !strings.Contains(so.String(), "\nflags:\n  --") {
					t.Fatalf("%q: help lists no flags:\n%s", args, so.String())
				}
			}
		})
	}
}

// A command whose positional arguments are fixed reports a missing or an
// extra one by name, on one line.
func TestWantArgs(t *testing.T) {
	if err := wantArgs("call", []string{"demo"}, 2); err == nil || err.Error() != "chio call: missing TOOL (usage: chio call SERVER TOOL [flags])" {
		t.Fatalf("missing: %v", err)
	}
	if err := wantArgs("approval show", []string{"a", "b"}, 1); err == nil || err.Error() != `chio approval show: unexpected argument "b" (usage: chio approval show ID [flags])` {
		t.Fatalf("extra: %v", err)
	}
	if err := wantArgs("approval show", []string{"a"}, 1); err != nil {
		t.Fatal(err)
	}
}
