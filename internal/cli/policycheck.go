package cli

import (
	"fmt"

	"github.com/chiokernel/chio/policy"
)

func init() {
	register("policy check FILE", "validate a policy file; every error with its line", runPolicyCheck)
}

func runPolicyCheck(e *Env, args []string) int {
	fs := newFlags(e, "policy check")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("policy check", pos, 1); err != nil {
		return fail(e, err)
	}
	p, err := policy.Load(pos[0])
	if err != nil {
		fmt.Fprintln(e.Stderr, err)
		return ExitError
	}
	fmt.Fprintf(e.Stdout, "%s: ok (%d servers, %d grants, policy_hash %s)\n", pos[0], len(p.Servers), len(p.Grants), p.Hash)
	return ExitOK
}
