package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A reload that trusts earlier voters again resolves a question whose
// counted approvals hold a quorum of agreeing answers, also when the
// latest counted approval is not among them. Quorum 2: the Finance Lead
// answers "us"; a reload removes them and the CFO answers "us" too (one
// counted); a reload removes the CFO as well and the SRE answers "eu"
// (one counted); a reload trusts all four again. Two counted approvals
// now give "us", a quorum, and every view counts "2 of 2"
// (approval.Request.LeadingApprovals), but the reload looked only at the
// SRE's "eu", the latest, and left the question open: the CTO's "eu" could
// then decide it the other way, or the deadline decline it.
func TestReloadResolvesAQuorumOfAgreeingAnswersBeforeTheLatest(t *testing.T) {
	var who []any
	for _, k := range []string{"%[1]s", "Finance Lead", "%[2]s", "CFO", "%[3]s", "SRE", askCTO.Public().String(), "CTO"} {
		who = append(who, k)
	}
	f := deadlineFixture(t, fmt.Sprintf(askQuorumPolicy, askApprovers(who...)), "ask")
	ctx := context.Background()
	out := askRegion(t, f)
	id := out.ApprovalRequestID
	reload := func(pairs ...any) {
		t.Helper()
		p, err := policy.Parse([]byte(fmt.Sprintf(askQuorumPolicy, askApprovers(pairs...))), "reload.toml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.k.ApplyPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		f.k.WaitRecovery(ctx)
	}
	all := f.k.Policy()
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionApproved, answering("us")), "", ""); err != nil {
		t.Fatal(err)
	}
	reload(cfo.Public().String(), "CFO", sre.Public().String(), "SRE", askCTO.Public().String(), "CTO")
	if res, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, answering("us")), "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the CFO's answer, the only counted one: %+v %v", res, err)
	}
	reload(sre.Public().String(), "SRE", askCTO.Public().String(), "CTO")
	if res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer, the only counted one: %+v %v", res, err)
	}
	if err := f.k.ApplyPolicy(ctx, all); err != nil {
		t.Fatal(err)
	}
	f.k.WaitRecovery(ctx)
	req, err := f.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusApproved {
		approved, _ := req.Progress()
		t.Fatalf("after the reload the question is %s while it shows %d of quorum %d agreeing approvals; want it approved by the two \"us\"", req.Status, approved, req.Quorum)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"us"`) {
		t.Fatalf("answer: %s %s; want the agreeing \"us\"", rec.Status, rec.Output)
	}
}
