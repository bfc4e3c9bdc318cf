package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// twoOfTwoAfterRemoval is twoOfThreePolicy without the Finance Lead.
const twoOfTwoAfterRemoval = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
deny_quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "SRE"
`

// The Finance Lead approves, a reload removes them (their key leaked,
// they left), and the CFO and the SRE approve: the call runs on those
// two, and the Finance Lead's vote, recorded before the reload, did not
// count. The allow receipt lists every vote ("approvers": the auditor
// requires a token for each), so it named the Finance Lead among the
// approvers of the call with nothing to say that their vote was not
// counted: read as signed, three people approved, one of them a key the
// operator had removed. The receipt must say who counted: it names the
// keys whose votes it lists but the policy in force did not count
// ("uncounted").
func TestReceiptSaysWhichRecordedVotesDidNotCount(t *testing.T) {
	f := deadlineFixture(t, twoOfThreePolicy, "deploys")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"service":"api","env":"production"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionApproved, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(fmt.Sprintf(twoOfTwoAfterRemoval, cfo.Public(), sre.Public())), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if res, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, nil), "", ""); err != nil || res.Outcome != approval.StatusPending || res.Approvals != 1 {
		t.Fatalf("the CFO's vote after the reload: %+v %v (want pending, 1 approval: the Finance Lead's no longer counts)", res, err)
	}
	res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, nil), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the SRE's vote: %+v %v", res, err)
	}
	r := f.receipt(t, res.ReceiptID)
	approvers := keysOf(t, r.Metadata["approvers"])
	if !slices.Contains(approvers, financeLead.Public().String()) {
		t.Fatalf("approvers %v: the Finance Lead's recorded vote is not listed (the export's token would be unaccounted for)", approvers)
	}
	raw, ok := r.Metadata["uncounted"]
	if !ok {
		t.Fatalf("the allow receipt lists approvers %v and says nothing of the Finance Lead's vote (%s) not counting: "+
			"read as signed, a key the policy had removed approved the call", approvers, financeLead.Public())
	}
	if got := keysOf(t, raw); !slices.Equal(got, []string{financeLead.Public().String()}) {
		t.Fatalf("uncounted %v, want only the Finance Lead %s", got, financeLead.Public())
	}
}
