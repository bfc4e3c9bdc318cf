package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestAskRefusesAnEmptyOrNullChoice: a single-choice or text answer must
// be a non-empty string, but a multiple-choice list under allow_other took
// "" and null: ["unit",null] was signed, accepted and handed to the agent
// as is, a null where the form offers a choice or a typed answer (a tool
// reading the list as strings fails on it, or reads an empty answer the
// approver never gave). Each choice of a list is a non-empty string: the
// token is refused (malformed) and nothing changes.
func TestAskRefusesAnEmptyOrNullChoice(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"prompt":"Which checks?","questions":[
		{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	for _, a := range []string{`{"checks":["unit",null]}`, `{"checks":["unit",""]}`, `{"checks":[null]}`} {
		tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(a) })
		if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrMalformedToken) {
			rec, _ := f.k.Call(out.RequestID)
			t.Fatalf("answers %s: accepted (%v); the call got %s", a, err, rec.Output)
		}
	}
	if req, _ := f.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("a refused answer changed the request: %+v", req)
	}
}
