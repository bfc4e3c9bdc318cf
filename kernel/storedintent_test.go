package kernel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A call parked before chio refused control and format characters in
// intent text resumes WITH its stored intent: the text rules apply to new
// calls, and resuming without the intent would skip the guards that read
// it (here governed_intent_required denied every such approved call).
func TestParkedCallResumesWithItsStoredIntent(t *testing.T) {
	f := lifecycle(t, "deny")
	ctx := context.Background()
	out := f.refund(t, 450)
	// As stored by an older chiod: a purpose with a bidi override.
	err := f.store.Update(ctx, func(tx kernel.Tx) error {
		rec, err := tx.Call(out.RequestID)
		if err != nil {
			return err
		}
		rec.Intent = json.RawMessage(`{"max_amount":{"currency":"USD","units":450},"purpose":"refund \u202eorder"}`)
		return tx.PutCall(rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if res.Call.Status != kernel.StatusAllowed || f.disp.count(out.RequestID) != 1 {
		t.Fatalf("a parked call with a pre-fix intent: %s by %s (%s)", res.Call.Status, res.Call.Guard, res.Call.Reason)
	}
}
