package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestAnswersOnlyAnswerAnApprovedQuestion: `answers` answer a question
// request, and only its approval (the form's "Send answers"; its Decline
// asks for none). A token that denies a question, or decides a tool call
// or a confirm, with an answers member was accepted and stored whole in
// the vote (GET /approvals/{id}, the receipt export): the record said
// the approver answered what nothing asked them. Such a token is refused
// (malformed), the request is unchanged and the token is not spent.
func TestAnswersOnlyAnswerAnApprovedQuestion(t *testing.T) {
	ctx := context.Background()
	f := hitlFixture(t)
	ask, err := f.k.Submit(ctx, f.call(t, "ask", `{"prompt":"Which account?","questions":[
		{"id":"acct","text":"Refund to which account?","type":"single","options":["acct-1","acct-2"]}]}`, ""))
	if err != nil || ask.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", ask, err)
	}
	confirm, err := f.k.Submit(ctx, f.call(t, "confirm", `{"prompt":"Send the report?"}`, ""))
	if err != nil || confirm.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", confirm, err)
	}
	tc := lifecycle(t, "deny")
	refund := tc.refund(t, 450)

	for _, c := range []struct {
		name, decision string
		f              *lf
		out            *kernel.Outcome
		answers        string
	}{
		{"a question's denial", "denied", f, ask, `{"acct":"acct-2"}`},
		{"a question's denial (empty answers)", "denied", f, ask, `{}`},
		{"a question's denial (null answers)", "denied", f, ask, `null`},
		{"a confirm's approval", "approved", f, confirm, `{"acct":"acct-2"}`},
		{"a confirm's denial", "denied", f, confirm, `{"acct":"acct-2"}`},
		{"a tool call's approval", "approved", tc, refund, `{"acct":"acct-2"}`},
		{"a tool call's denial", "denied", tc, refund, `{}`},
	} {
		tok := c.f.token(t, c.out.ApprovalRequestID, financeLead, c.decision, func(tk *approval.Token) {
			tk.Note = "no"
			tk.Answers = json.RawMessage(c.answers)
		})
		for try := 0; try < 2; try++ { // refused, not spent: refused the same way again
			if _, err := c.f.k.Respond(ctx, c.out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrMalformedToken) {
				req, _ := c.f.k.Approval(c.out.ApprovalRequestID)
				stored := ""
				if len(req.Votes) > 0 {
					stored = string(req.Votes[0].Token)
				}
				t.Fatalf("%s with answers %s: %v, want a malformed token; the request is %s, the vote's token stored %s",
					c.name, c.answers, err, req.Status, stored)
			}
		}
		if req, _ := c.f.k.Approval(c.out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
			t.Fatalf("%s: a refused token changed the request: %+v", c.name, req)
		}
	}
	// What was asked still decides.
	if _, err := f.k.Respond(ctx, ask.ApprovalRequestID, f.token(t, ask.ApprovalRequestID, financeLead, "denied",
		func(tk *approval.Token) { tk.Note = "no" }), "", ""); err != nil {
		t.Fatal(err)
	}
}
