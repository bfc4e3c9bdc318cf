package kernel_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// A resolved request counts, in every view (approval.Request.Progress and
// UncountedNote: Slack, `chio approval show`; the dashboard mirrors them),
// the votes its deciding receipt counts. The Finance Lead's "us", trusted
// again by a reload, beside the CFO's and the SRE's "eu" that decide the
// question: the allow receipt names the Finance Lead in uncounted, yet the
// resolved request counted every recorded vote ("3/2 approvals") and said
// nothing beside the Finance Lead's.
func TestResolvedQuestionCountsTheVotesItsReceiptCounts(t *testing.T) {
	f, out := retrustedDisagreement(t, 2, true)
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the SRE's answer: %+v %v", res, err)
	}
	r := f.receipt(t, res.ReceiptID)
	uncounted := keysOf(t, r.Metadata["uncounted"])
	if !slices.Equal(uncounted, []string{financeLead.Public().String()}) {
		t.Fatalf("receipt's uncounted %v, want the Finance Lead", uncounted)
	}
	req, err := f.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if approved, denied := req.Progress(); approved != 2 || denied != 0 {
		t.Errorf("the resolved question shows %d/%d approvals, %d denied; its receipt counts 2 approvals", approved, req.Quorum, denied)
	}
	for i := range req.Votes {
		v := &req.Votes[i]
		want := ""
		if slices.Contains(uncounted, v.Approver) {
			want = approval.AnsweredOtherwiseNote
		}
		if got := req.UncountedNote(v); got != want {
			t.Errorf("the resolved question marks %s's vote %q, want %q (the receipt's uncounted: %v)", v.DisplayName, got, want, uncounted)
		}
	}
}
