package approval

import (
	"encoding/json"
	"testing"
)

// answered is an approving vote by key whose signed token answers region.
func answered(key, region string) Vote {
	return Vote{Approver: key, Decision: DecisionApproved, Token: json.RawMessage(`{"answers":{"region":"` + region + `"}}`)}
}

// A question is decided only by a quorum of counted approvals giving the
// same answers (the kernel's sameAnswers and AgreeingWith): after a
// reload trusts again the Finance Lead, whose "us" differs from the CFO's
// and the SRE's "eu", three counted approvals make a quorum of 3 for no
// answer, and the question stays open. Progress counted all three, and
// every view said "3 of 3" for a question still open; it must count the
// largest agreeing set, 2.
func TestProgressCountsOnlyAgreeingAnswersOfAQuestion(t *testing.T) {
	r := &Request{Kind: KindQuestion, Status: StatusPending, Quorum: 3,
		TrustedApprovers: []string{"ed25519:lead", "ed25519:cfo", "ed25519:sre"},
		Votes:            []Vote{answered("ed25519:lead", "us"), answered("ed25519:cfo", "eu"), answered("ed25519:sre", "eu")}}
	if a, d := r.Progress(); a != 2 || d != 0 {
		t.Fatalf("pending question: %d approved, %d denied; want 2, 0 (only the two \"eu\" answers agree)", a, d)
	}
}
