package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestAskRefusesAMultipleChoiceNamingAnOptionTwice: a token answering a
// multiple-choice question with ["unit","unit"] was accepted, and the
// agent got the option twice — read by a tool that acts once per pick,
// twice what the form offered as one choice. The terminal watch refuses
// such a pick at its prompt, but the dashboard (a checkbox and the same
// text typed under Other), the SDK and any hand-made token reach chiod's
// own check. The token is refused (malformed) and nothing changes: the
// request stays pending, without a vote, and a proper answer decides it.
func TestAskRefusesAMultipleChoiceNamingAnOptionTwice(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"prompt":"Which checks?","questions":[
		{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	for _, a := range []string{`{"checks":["unit","unit"]}`, `{"checks":["load test","e2e","load test"]}`} {
		tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(a) })
		if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrMalformedToken) {
			rec, _ := f.k.Call(out.RequestID)
			t.Fatalf("answers %s: accepted (%v); the call got %s", a, err, rec.Output)
		}
	}
	if req, _ := f.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("a refused answer changed the request: %+v", req)
	}
	if _, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved",
		func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"checks":["unit","e2e"]}`) }), "", ""); err != nil {
		t.Fatal(err)
	}
}
