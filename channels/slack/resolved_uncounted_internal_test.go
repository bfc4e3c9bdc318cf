package slack

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// Once a request is resolved its message counts the votes its deciding
// receipt counts (Resolution.Uncounted names the others, as the receipt's
// "uncounted" does), with the words of an open request: the question the
// CFO's and the SRE's "eu" decided read "3/2 approvals" beside the
// Finance Lead's "us", the receipt's uncounted vote, marked as nothing;
// and the vote of an approver a reload had removed, "not counted" while
// the request was open, lost its mark once the request was decided.
func TestResolvedMessageCountsAsItsReceipt(t *testing.T) {
	req := disagreeingQuestion()
	req.Quorum, req.Status = 2, approval.StatusApproved
	req.Votes[2].TokenID = "tok-sre"
	req.Resolution = &approval.Resolution{Outcome: approval.StatusApproved, TokenID: "tok-sre", ReceiptID: "rc-1",
		Uncounted: []string{"ed25519:lead"}}
	s, lead := renderedText(t, req, "Finance Lead")
	if !strings.Contains(s, "2/2 approvals") || !strings.Contains(lead, approval.AnsweredOtherwiseNote) || strings.Count(s, "not counted") != 1 {
		t.Fatalf("the decided question's message must count 2/2 approvals and mark only the Finance Lead's %q; line %q:\n%s",
			approval.AnsweredOtherwiseNote, lead, s)
	}

	req.TrustedApprovers = []string{"ed25519:cfo", "ed25519:sre", "ed25519:cto"} // a reload removed the Finance Lead
	s, lead = renderedText(t, req, "Finance Lead")
	if !strings.Contains(s, "2/2 approvals") || !strings.Contains(lead, approval.NoLongerApproverNote) || strings.Count(s, "not counted") != 1 {
		t.Fatalf("the removed Finance Lead's line %q must say %q, and only theirs:\n%s", lead, approval.NoLongerApproverNote, s)
	}
}
