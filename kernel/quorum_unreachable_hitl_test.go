package kernel_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// unreachableConfirmPolicy: a confirm needs 2 approvals of Lead (%s) and
// CFO (%s), and its deadline says auto_approve_advisory, which the kernel
// never applies to a confirm or ask (timers.go: unanswered, it is
// declined); %s adds approvers.
const unreachableConfirmPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "payouts"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 600
quorum = 2
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = %q
display_name = "Lead"
[[grants.approval.approvers]]
public_key = %q
display_name = "CFO"
%s`

// An agent holding Lead's key asks for a confirm under a quorum-2 grant of
// Lead and CFO: only CFO may decide it, so the quorum can never be met.
// The grant's deadline is auto_approve_advisory, yet a confirm or ask is
// declined at its deadline, never run by the kernel: the call could only
// end denied, as under timeout_action deny. It parked anyway, telling CFO
// "the call runs once 2 have approved". It is denied at once (guard
// approval-policy); and a reload that leaves a parked confirm's quorum out
// of reach ends it likewise.
func TestConfirmWhoseQuorumCannotBeMetIsDeniedDespiteAdvisory(t *testing.T) {
	cfo := keys.FromSeed(bytes.Repeat([]byte{41}, 32))
	cto := keys.FromSeed(bytes.Repeat([]byte{42}, 32))
	submit := func(t *testing.T, f *fixture, toml string) *kernel.Outcome {
		t.Helper()
		return submitUnder(t, f, toml, "confirm", `{"prompt":"Pay the vendor?"}`)
	}

	t.Run("at park", func(t *testing.T) {
		f := newFixture(t)
		out := submit(t, f, fmt.Sprintf(unreachableConfirmPolicy, f.agent.Public().String(), cfo.Public().String(), ""))
		if out.Status != kernel.StatusDenied || out.Guard != kernel.GuardApprovalPolicy || !strings.Contains(out.Reason, "quorum") {
			t.Fatalf("the confirm is %s (guard %q, %q); want denied by %s naming the quorum: its deadline declines it",
				out.Status, out.Guard, out.Reason, kernel.GuardApprovalPolicy)
		}
	})

	t.Run("at reload", func(t *testing.T) {
		f := newFixture(t)
		ctoBlock := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"CTO\"\n", cto.Public().String())
		out := submit(t, f, fmt.Sprintf(unreachableConfirmPolicy, f.agent.Public().String(), cfo.Public().String(), ctoBlock))
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("the confirm: %+v; want it parked (CFO and CTO may meet the quorum)", out)
		}
		// The reload removes CTO.
		reloadDeniesByApprovalPolicy(t, f, fmt.Sprintf(unreachableConfirmPolicy, f.agent.Public().String(), cfo.Public().String(), ""), out.ApprovalRequestID)
	})
}
