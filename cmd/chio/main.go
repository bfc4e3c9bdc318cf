// Command chio is the CLI for platform teams, approvers, auditors and agents.
package main

import (
	"os"

	"github.com/chiokernel/chio/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
