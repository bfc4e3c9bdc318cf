package kernel_test

// Deadlines and quorums of requests a human must answer: what the
// advisory auto-approval may not do, and what a quorum of answers means.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// deadlineFixture loads a policy (fmt verbs %[1]s..%[3]s = financeLead, cfo, sre)
// and gives the agent a capability for grants.
func deadlineFixture(t *testing.T, text string, grants ...string) *lf {
	t.Helper()
	f := newFixture(t)
	text = fmt.Sprintf(text, financeLead.Public(), cfo.Public(), sre.Public())
	p, err := policy.Parse([]byte(text), "deadline.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.agent = agentK
	f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), grants, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &lf{fixture: f, policyText: text}
}

// With deny_quorum = 2 one human's denial does not end the request; at the
// deadline auto_approve_advisory must not then approve and run it (it did,
// with a receipt saying "no human reviewed this call"): the advisory
// approval is for calls nobody decided. The deadline denies it instead.
func TestAutoApproveNeverOverridesAHumanDenial(t *testing.T) {
	f := deadlineFixture(t, `
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
timeout_action = "auto_approve_advisory"
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
`, "deploys")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "echo", `{"service":"api","env":"production"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	res, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, "denied", func(tk *approval.Token) { tk.Note = "do not deploy: incident open" }), "", "")
	if err != nil || res.Outcome != approval.StatusPending {
		t.Fatalf("one denial of deny_quorum 2: %+v %v", res, err)
	}
	f.clock.Advance(600 * time.Second)
	eventually(t, "deadline handled", func() bool { r, _ := f.k.Approval(id); return r.Status != approval.StatusPending })
	f.k.WaitSettles()
	rec, _ := f.k.Call(out.RequestID)
	r := f.receipt(t, rec.ReceiptID)
	if n := f.disp.count(out.RequestID); n != 0 || rec.Status != kernel.StatusDenied || r.Decision.Guard != kernel.GuardApprovalTimeout {
		t.Fatalf("a call a human denied, at the deadline: dispatched %d, status %s, receipt %s/%s auto_approved=%v",
			n, rec.Status, r.Decision.Verdict, r.Decision.Guard, r.Metadata["auto_approved"])
	}
	// Undenied, the same grant still auto-approves at the deadline.
	out, err = f.k.Submit(ctx, f.call(t, "echo", `{"service":"api","env":"staging"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	f.clock.Advance(600 * time.Second)
	eventually(t, "auto-approved", func() bool { c, _ := f.k.Call(out.RequestID); return c.Status == kernel.StatusAllowed })
	f.k.WaitSettles()
	if f.disp.count(out.RequestID) != 1 {
		t.Fatalf("an undecided call was not auto-approved: dispatched %d", f.disp.count(out.RequestID))
	}
}

const hitlAutoApprovePolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 300
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants]]
id = "ask"
server = "demo"
tool = "ask"
[grants.approval]
timeout_seconds = 300
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`

// auto_approve_advisory on an `ask` grant must not "answer" the question:
// it used to end the call allowed with {"answers":null}. An ask or confirm
// nobody answered is declined at the deadline.
func TestUnansweredAskIsDeclinedAtTheDeadline(t *testing.T) {
	f := deadlineFixture(t, hitlAutoApprovePolicy, "confirm", "ask")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"questions":[{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	f.clock.Advance(300 * time.Second)
	eventually(t, "deadline handled", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
	rec, _ := f.k.Call(out.RequestID)
	if rec.Status != kernel.StatusDenied || rec.Guard != kernel.GuardApprovalTimeout {
		t.Fatalf("an ask nobody answered ended %s (%s) with output %s", rec.Status, rec.Guard, rec.Output)
	}
}

// The same for `confirm`: the agent was told {"confirmed":true} at the
// deadline although no person confirmed anything.
func TestUnansweredConfirmIsDeclinedAtTheDeadline(t *testing.T) {
	f := deadlineFixture(t, hitlAutoApprovePolicy, "confirm", "ask")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "confirm", `{"prompt":"Wire 40,000 EUR to the new supplier?"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	f.clock.Advance(300 * time.Second)
	eventually(t, "deadline handled", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
	rec, _ := f.k.Call(out.RequestID)
	if r := f.receipt(t, rec.ReceiptID); rec.Status != kernel.StatusDenied || r.Decision.Verdict != receipt.Deny {
		t.Fatalf("a confirm nobody answered ended %s with output %s (receipt %s)", rec.Status, rec.Output, r.Decision.Verdict)
	}
}

// On an `ask` grant with quorum = 2, two approvals count only if they give
// the same answers: two people who disagree ("eu" vs "us") used to make a
// "2 of 2" answer one of them never gave. The second, differing answer is
// refused (nothing consumed); the same answer completes the quorum.
func TestQuorumOfAnswersMustAgree(t *testing.T) {
	f := deadlineFixture(t, `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "ask"
server = "demo"
tool = "ask"
[grants.approval]
timeout_seconds = 300
quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
`, "ask")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"questions":[{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"region":"eu"}`) }), "", ""); err != nil {
		t.Fatal(err)
	}
	res, err := f.k.Respond(ctx, id, f.token(t, id, cfo, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"region":"us"}`) }), "", "")
	if !errors.Is(err, approval.ErrMalformedToken) {
		rec, _ := f.k.Call(out.RequestID)
		t.Fatalf("quorum 2 met by disagreeing answers (eu vs us): %+v %v; agent got %s", res, err, rec.Output)
	}
	res, err = f.k.Respond(ctx, id, f.token(t, id, cfo, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"region":"eu"}`) }), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the same answers from a second approver: %+v %v", res, err)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("agreed answer: %s %s", rec.Status, rec.Output)
	}
}
