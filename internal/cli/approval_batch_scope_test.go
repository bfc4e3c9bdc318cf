package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// `chio approval batch create` said only "standing approval for demo/issue_*
// at kernel … until …": not which agents it covers, nor its limits, nor
// that a pattern ending in * takes every tool whose name starts so. What
// the approver signed must be said back whole, in words that do not
// promise less than the kernel lets through.
func TestBatchCreateSaysAllItSigned(t *testing.T) {
	w := newApprovalWorld(t)
	agent := keys.FromSeed([]byte("an-agent-an-agent-an-agent-32byt")).Public().String()
	_, se, code := w.run(adminEnv(), "approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_*",
		"--subject", agent, "--max-calls", "3", "--max-amount-per-call", "500:USD", "--max-total", "1000:USD", "--for", "1h")
	if code != 0 {
		t.Fatalf("create: exit %d, stderr %s", code, se)
	}
	for _, want := range []string{
		"calls by agent " + agent,
		`to: every tool whose name starts with "issue_", on server demo`,
		"at most 3 calls",
		"each moving at most 500 USD",
		"at most 1000 USD in all",
	} {
		if !strings.Contains(se, want) {
			t.Errorf("the create's report does not say %q:\n%s", want, se)
		}
	}
	_, se, code = w.run(adminEnv(), "approval", "batch", "create", "--key", w.key("lead"), "--server", "demo", "--tool", "issue_refund", "--for", "1h")
	if code != 0 {
		t.Fatalf("create: exit %d, stderr %s", code, se)
	}
	for _, want := range []string{"calls by any agent", "to: tool issue_refund, on server demo", "no limit on the number of calls", "no amount limit"} {
		if !strings.Contains(se, want) {
			t.Errorf("the create's report does not say %q:\n%s", want, se)
		}
	}
}
