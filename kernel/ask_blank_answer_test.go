package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestAskRefusesABlankTypedAnswer: a typed answer (a text question's, or
// an "Other" under allow_other) must be a non-empty string, but one of
// spaces, a tab and a newline, or of invisible characters alone (a
// zero-width space, a bidi override, a blank Braille cell) was accepted
// and handed to the agent as the human's answer, though it shows as
// nothing: the dashboard's form refuses such an answer ("Please answer"),
// the token did not. It is refused (malformed) and nothing changes; an
// answer with something visible in it passes as typed.
func TestAskRefusesABlankTypedAnswer(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"prompt":"New project","questions":[
		{"id":"name","text":"Project name?","type":"text"},
		{"id":"acct","text":"Bill which account?","type":"single","options":["acct-1","acct-2"],"allow_other":true},
		{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	for _, blank := range []string{" ", "   ", "\t\n ", "\u3000", "\u00a0", "\u200b", "\u202e", "\u200b\u2060", "\u2800", "\ufeff "} {
		b, _ := json.Marshal(blank)
		for _, a := range []string{
			`{"name":` + string(b) + `,"acct":"acct-1","checks":["unit"]}`,
			`{"name":"atlas","acct":` + string(b) + `,"checks":["unit"]}`,
			`{"name":"atlas","acct":"acct-1","checks":["unit",` + string(b) + `]}`,
		} {
			tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(a) })
			if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrMalformedToken) {
				rec, _ := f.k.Call(out.RequestID)
				t.Fatalf("answers %s: accepted (%v); the call got %s", a, err, rec.Output)
			}
		}
	}
	if req, _ := f.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("a refused answer changed the request: %+v", req)
	}
	a := `{"name":" atlas\u200b ","acct":"acct\u00a09","checks":["unit","e2e \u2764\ufe0f"]}`
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) { tk.Answers = json.RawMessage(a) })
	if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil {
		t.Fatalf("answers %s: %v", a, err)
	}
}
