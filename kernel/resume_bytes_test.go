package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// The tool receives exactly the canonical bytes parameter_hash covers on
// the approval path too: an approved call is resumed from its stored
// record, and that record must hold the arguments and the governed intent
// as they were hashed. (encoding/json writes "<", ">" and "&" in a
// json.RawMessage as \u003c, \u003e and \u0026: the same JSON value, but
// not the bytes the hash and the receipt cover, nor what the approver was
// shown.)
func TestApprovedCallReceivesTheCanonicalBytes(t *testing.T) {
	tool := &scriptedTool{}
	w := newWAWorld(t, tool)
	const args = `{"path":"/tmp/<a>&b"}`
	const intent = `{"purpose":"clean <tmp> & logs"}`
	out := w.Submit(t, "delete_file", args, intent)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("parked: %+v", out)
	}
	rec, err := w.Kernel.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Arguments) != args || string(rec.Intent) != intent {
		t.Errorf("stored record holds arguments %s and intent %s; want %s and %s", rec.Arguments, rec.Intent, args, intent)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) { tk.Note = "ok <3 & go" })
	res, err := w.Kernel.Respond(context.Background(), out.ApprovalRequestID, tok, "", "")
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusAllowed {
		t.Fatalf("approved: %+v %v", res, err)
	}
	// The vote keeps the signed token exactly as received: the auditor's
	// evidence (approval.Vote.Token).
	req, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Votes) != 1 || string(req.Votes[0].Token) != string(tok) {
		t.Errorf("the stored vote holds %s, want the token as received: %s", req.Votes[0].Token, tok)
	}
	d := tool.deliveries(out.RequestID)
	if len(d) != 1 || string(d[0].Arguments) != args {
		t.Fatalf("the approved call reached the tool with %q, want exactly %s", d[0].Arguments, args)
	}
	want, _ := kernel.ParameterHash("pay", "delete_file", d[0].Arguments, []byte(intent))
	if r := w.Receipt(t, res.Call.ReceiptID); r.ParameterHash != want {
		t.Fatalf("hash %s does not cover the delivered bytes (%s)", r.ParameterHash, want)
	}
}
