package kernel_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// An answered question returns to the agent the answers as the approver
// signed them, and the note as written: json.Marshal would write '<',
// '>' and '&' in them as \u003c, \u003e and \u0026, and `chio await`
// prints the output's bytes.
func TestAskReturnsTheAnswersAsSigned(t *testing.T) {
	f := hitlFixture(t)
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "ask", `{"prompt":"Anything?","questions":[{"id":"why","text":"Why?","type":"text"}]}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	const answers = `{"why":"<b> & c"}`
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) {
		tk.Answers, tk.Note = json.RawMessage(answers), "ok <3"
	})
	if _, err := f.k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	rec, err := f.k.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(rec.Output); !strings.Contains(s, `"answers":`+answers) || !strings.Contains(s, `"note":"ok <3"`) {
		t.Fatalf("the agent gets %s; want the answers %s and the note as signed", s, answers)
	}
}
