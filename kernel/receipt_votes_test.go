package kernel_test

// What a final receipt signs about the votes on its approval request: the
// auditor's offline check (receipt/verify_votes.go) requires a token in the
// export for every key it names, and no other.

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

const twoOfThreePolicy = `
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
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "%[3]s"
display_name = "SRE"
`

func keysOf(t *testing.T, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("not a list: %#v", v)
	}
	var out []string
	for _, x := range list {
		out = append(out, x.(string))
	}
	return out
}

// A two-of-three approval with one dissenting denial: the allow receipt
// signs both approvers and the dissenter, so every token the export
// carries is accounted for by the signed receipt.
func TestFinalReceiptSignsApproversAndDissenters(t *testing.T) {
	f := deadlineFixture(t, twoOfThreePolicy, "deploys")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"service":"api","env":"production"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionDenied, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, nil), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("third vote: %+v %v", res, err)
	}
	r := f.receipt(t, res.ReceiptID)
	approvers, dissenters := keysOf(t, r.Metadata["approvers"]), keysOf(t, r.Metadata["dissenters"])
	if len(approvers) != 2 || approvers[0] != cfo.Public().String() || approvers[1] != sre.Public().String() ||
		len(dissenters) != 1 || dissenters[0] != financeLead.Public().String() {
		t.Fatalf("allow receipt: approvers %v, dissenters %v", approvers, dissenters)
	}
}

// A request ended with no deciding vote (cancelled) after two votes: the
// receipt is signed (it used to dereference the missing deciding vote).
func TestCancelAfterTwoVotesSignsAReceipt(t *testing.T) {
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
	if _, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionDenied, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	c, err := f.k.Cancel(ctx, id, "changed my mind", "admin")
	if err != nil || c.Status != kernel.StatusCancelled {
		t.Fatalf("cancel after two votes: %+v %v", c, err)
	}
}
