package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestDenialWithABlankNoteNamesTheApprover: a denial's signed note is its
// reason, and a denial without one reads "denied by <approver>". A note of
// spaces or invisible characters alone (a zero-width space, a bidi mark)
// became the reason as is: the agent was told, and the deny receipt and
// `chio receipt list` said, that the call was denied for a reason that
// shows as nothing, and by no one. Such a note is no reason: the denial
// stands (a deny is never refused for its note) and reads as one without
// a note; the note itself stays in the receipt's metadata as signed.
func TestDenialWithABlankNoteNamesTheApprover(t *testing.T) {
	for _, note := range []string{"   ", "\u200b", "\u200f \u2060"} {
		f := lifecycle(t, "deny")
		out := f.refund(t, 450)
		res, err := f.k.Respond(context.Background(), out.ApprovalRequestID,
			f.token(t, out.ApprovalRequestID, financeLead, "denied", func(tk *approval.Token) { tk.Note = note }), "", "")
		if err != nil || res.Outcome != approval.StatusDenied {
			t.Fatalf("note %q: %+v %v", note, res, err)
		}
		rec, _ := f.k.Call(out.RequestID)
		rc := f.receipt(t, rec.ReceiptID)
		const want = "denied by Finance Lead"
		if rec.Status != kernel.StatusDenied || rec.Reason != want || rc.Decision.Reason != want {
			t.Fatalf("note %q: the call's reason is %q, the receipt's %q; want %q", note, rec.Reason, rc.Decision.Reason, want)
		}
		if rc.Metadata["note"] != note {
			t.Fatalf("note %q: the receipt's metadata note is %q", note, rc.Metadata["note"])
		}
	}
}
