package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// askCTO is a fourth approver for the quorum-3 disagreements.
var askCTO = keys.FromSeed([]byte("cto-cto-cto-cto-cto-cto-cto-cto-"))

// askRegion parks the region question on f.
func askRegion(t *testing.T, f *lf) *kernel.Outcome {
	t.Helper()
	out, err := f.k.Submit(context.Background(), f.call(t, "ask", `{"questions":[{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	return out
}

// retrustedDisagreement stages counted answers that disagree on an ask
// grant of the given quorum (2: Finance Lead, CFO and SRE; 3: the CTO
// too): the Finance Lead answers "us", a reload removes them, the CFO
// answers "eu", and a reload trusts the Finance Lead again (their "us"
// counts again beside the CFO's "eu"). With retrust false it stops before
// that last reload. It returns the fixture and the parked question.
func retrustedDisagreement(t *testing.T, quorum int, retrust bool) (*lf, *kernel.Outcome) {
	t.Helper()
	text := strings.Replace(askQuorumPolicy, "quorum = 2", fmt.Sprintf("quorum = %d", quorum), 1)
	var cto []any
	if quorum > 2 {
		cto = []any{askCTO.Public().String(), "CTO"}
	}
	f := deadlineFixture(t, fmt.Sprintf(text, askApprovers(append([]any{"%[1]s", "Finance Lead", "%[2]s", "CFO", "%[3]s", "SRE"}, cto...)...)), "ask")
	ctx := context.Background()
	out := askRegion(t, f)
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionApproved, answering("us")), "", ""); err != nil {
		t.Fatal(err)
	}
	all := f.k.Policy()
	p, err := policy.Parse([]byte(fmt.Sprintf(text, askApprovers(append([]any{cfo.Public().String(), "CFO", sre.Public().String(), "SRE"}, cto...)...))), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, answering("eu")), "", ""); err != nil {
		t.Fatalf("the CFO's answer after the Finance Lead's removal: %v", err)
	}
	if retrust {
		if err := f.k.ApplyPolicy(ctx, all); err != nil {
			t.Fatal(err)
		}
		f.k.WaitRecovery(ctx)
	}
	return f, out
}

// A question whose counted answers disagree (the Finance Lead's "us",
// trusted again by a reload, beside the CFO's "eu", given while the
// Finance Lead was removed) stays open: neither is a quorum. The SRE then
// answers "eu" too, and two counted approvals give the same answers: a
// quorum of 2. The SRE's answer was refused ("these answers differ from
// those Finance Lead gave"), and so would any answer be, agreeing with the
// one or the other: the question could never be answered, only declined
// at its deadline.
func TestAnswerAgreeingWithOneSideOfARetrustedDisagreementDecides(t *testing.T) {
	f, out := retrustedDisagreement(t, 2, true)
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the SRE's answer, agreeing with the CFO's: %+v %v", res, err)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("answer: %s %s", rec.Status, rec.Output)
	}
	// The receipt lists the Finance Lead among the approvers (they
	// approved), and says their vote did not count toward "eu".
	r := f.receipt(t, res.ReceiptID)
	if got := keysOf(t, r.Metadata["uncounted"]); !slices.Equal(got, []string{financeLead.Public().String()}) {
		t.Fatalf("uncounted %v, want only the Finance Lead %s, whose answer (us) is not the one given", got, financeLead.Public())
	}
}

// With quorum 3 the same disagreement needs three agreeing answers: the
// SRE's "eu" beside the CFO's makes two (the Finance Lead's "us" counts,
// but not toward "eu"), so the question stays open, and the CTO's "eu"
// decides it. Counting every approval (three with the SRE's) would
// approve it on answers that do not agree, and its resume deny it.
func TestRetrustedDisagreementNeedsAQuorumOfAgreeingAnswers(t *testing.T) {
	f, out := retrustedDisagreement(t, 3, true)
	ctx, id := context.Background(), out.ApprovalRequestID
	res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer, the second \"eu\" of quorum 3: %+v %v; want it recorded, the question still open", res, err)
	}
	res, err = f.k.Respond(ctx, id, f.token(t, id, askCTO, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the CTO's answer, the third \"eu\": %+v %v", res, err)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("answer: %s %s", rec.Status, rec.Output)
	}
}

// A reload decides a question by its largest agreeing set, not by the
// latest counted approval alone. Quorum 2: the Finance Lead answers "eu"
// and a reload removes them; the CFO answers "eu" and a reload removes the
// CFO too; the SRE then answers "us" (no counted answer to differ from).
// A reload trusting everyone again counts the Finance Lead's and the CFO's
// "eu", a quorum of agreeing answers: the policy in force approves "eu",
// as the CTO's answer would have at once. It was left open (the latest
// counted approval, the SRE's "us", agrees with nobody), although every
// view counts 2 of 2, and the CTO could still decide it "us".
func TestReloadDecidesAQuestionByItsAgreeingQuorumNotTheLatestAnswer(t *testing.T) {
	ctx := context.Background()
	all := []any{"%[1]s", "Finance Lead", "%[2]s", "CFO", "%[3]s", "SRE", askCTO.Public().String(), "CTO"}
	f := deadlineFixture(t, fmt.Sprintf(askQuorumPolicy, askApprovers(all...)), "ask")
	everyone := f.k.Policy()
	reload := func(pairs ...any) {
		t.Helper()
		p, err := policy.Parse([]byte(fmt.Sprintf(askQuorumPolicy, askApprovers(pairs...))), "reload.toml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.k.ApplyPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	out := askRegion(t, f)
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, approval.DecisionApproved, answering("eu")), "", ""); err != nil {
		t.Fatal(err)
	}
	reload(cfo.Public().String(), "CFO", sre.Public().String(), "SRE", askCTO.Public().String(), "CTO")
	if _, err := f.k.Respond(ctx, id, f.token(t, id, cfo, approval.DecisionApproved, answering("eu")), "", ""); err != nil {
		t.Fatal(err)
	}
	reload(sre.Public().String(), "SRE", askCTO.Public().String(), "CTO")
	if res, err := f.k.Respond(ctx, id, f.token(t, id, sre, approval.DecisionApproved, answering("us")), "", ""); err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer while the Finance Lead and the CFO are removed: %+v %v", res, err)
	}
	if err := f.k.ApplyPolicy(ctx, everyone); err != nil {
		t.Fatal(err)
	}
	f.k.WaitRecovery(ctx)
	req, err := f.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusApproved {
		t.Fatalf("after the reload trusting everyone again the question is %s, its progress %d of %d: the Finance Lead's and the CFO's \"eu\" meet quorum 2, so the reload must approve it",
			req.Status, req.LeadingApprovals(req.TrustedApprovers), req.Quorum)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("answer: %s %s", rec.Status, rec.Output)
	}
}
