package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// The answer that leaves a question open after a retrusted disagreement
// (the Finance Lead's "us" beside the CFO's and the SRE's "eu", quorum 3)
// was told "3 of 3 so far" (RespondResult.Approvals counted every counted
// approval) while the kernel, counting only agreeing answers, has two and
// keeps the question open. The SRE must be told 2 of 3.
func TestAnswerLeavingARetrustedDisagreementOpenIsToldTheAgreeingCount(t *testing.T) {
	cto := keys.FromSeed([]byte("cto-cto-cto-cto-cto-cto-cto-cto-"))
	quorum3 := strings.Replace(askQuorumPolicy, "quorum = 2", "quorum = 3", 1)
	f := deadlineFixture(t, fmt.Sprintf(quorum3, askApprovers("%[1]s", "Finance Lead", "%[2]s", "CFO", "%[3]s", "SRE", cto.Public().String(), "CTO")), "ask")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"questions":[{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionApproved, answering("us")), "", ""); err != nil {
		t.Fatal(err)
	}
	all := f.k.Policy()
	p, err := policy.Parse([]byte(fmt.Sprintf(quorum3, askApprovers(cfo.Public().String(), "CFO", sre.Public().String(), "SRE", cto.Public().String(), "CTO"))), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, answering("eu")), "", ""); err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(ctx, all); err != nil {
		t.Fatal(err)
	}
	f.k.WaitRecovery(ctx)
	res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer: %+v %v; want the question still open", res, err)
	}
	if res.Approvals != 2 || res.Quorum != 3 {
		t.Fatalf("the SRE is told %d of %d approvals while the question is open; want 2 of 3 (only the two \"eu\" answers agree)", res.Approvals, res.Quorum)
	}
}
