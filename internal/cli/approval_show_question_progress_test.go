package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// disagreeingQuestion makes req a quorum-3 question whose counted answers
// disagree (what a reload that trusts an earlier voter again leaves: the
// Lead's "us" beside the CFO's and the SRE's "eu").
func disagreeingQuestion(req *approval.Request) {
	req.Kind, req.Quorum = approval.KindQuestion, 3
	stageVote(req, "Lead", "us")
	stageVote(req, "CFO", "eu")
	stageVote(req, "SRE", "eu")
}

// Such a question is open: the kernel decides it only by three agreeing
// answers. `chio approval show` said "QUORUM 3/3 approved" for it; it must
// count the agreeing ones, 2/3.
func TestApprovalShowCountsOnlyAgreeingAnswersOfAQuestion(t *testing.T) {
	w := newApprovalWorld(t)
	quorum, so := w.showLine(t, w.parkStaged(t, disagreeingQuestion), "QUORUM", "")
	if !strings.Contains(quorum, "2/3 approved") {
		t.Fatalf("approval show says %q of the open question; want 2/3 approved (two agreeing answers):\n%s", quorum, so)
	}
}

// Beside "QUORUM 2/3 approved" the three VOTE rows read alike: the one
// whose answers ("us") differ from the two agreeing ("eu") must say so.
func TestApprovalShowMarksAnApprovalThatAnsweredOtherwise(t *testing.T) {
	w := newApprovalWorld(t)
	lead, so := w.showLine(t, w.parkStaged(t, disagreeingQuestion), "VOTE", "by Lead")
	if !strings.Contains(lead, "answered otherwise") || strings.Count(so, "answered otherwise") != 1 {
		t.Fatalf("the Lead's VOTE row %q must say their answers are not the agreeing ones, and only theirs:\n%s", lead, so)
	}
}
