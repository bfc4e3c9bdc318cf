package slack

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// disagreeingQuestion is a question whose counted answers disagree after a
// reload trusted the Finance Lead again ("us" beside the CFO's and the
// SRE's "eu", quorum 3): still open, as the kernel decides it only by
// three agreeing answers.
func disagreeingQuestion() *approval.Request {
	vote := func(key, name, region string) approval.Vote {
		return approval.Vote{Approver: key, DisplayName: name, Decision: approval.DecisionApproved, Channel: "api",
			Token: json.RawMessage(`{"answers":{"region":"` + region + `"}}`)}
	}
	return &approval.Request{ApprovalID: "ar-1", Kind: approval.KindQuestion, Status: approval.StatusPending, ToolServer: "chio", ToolName: "ask",
		Quorum: 3, TrustedApprovers: []string{"ed25519:lead", "ed25519:cfo", "ed25519:sre", "ed25519:cto"},
		Votes: []approval.Vote{vote("ed25519:lead", "Finance Lead", "us"), vote("ed25519:cfo", "CFO", "eu"), vote("ed25519:sre", "SRE", "eu")}}
}

// renderedText is req's message as JSON text, and the line naming who.
func renderedText(t *testing.T, req *approval.Request, who string) (all, line string) {
	t.Helper()
	blocks, _, _ := (&Channel{}).render(req)
	raw, err := json.Marshal(blocks)
	if err != nil {
		t.Fatal(err)
	}
	all = string(raw)
	if i := strings.Index(all, who); i >= 0 {
		line = all[i:]
		line = line[:max(0, strings.Index(line, "\\n"))]
	}
	return all, line
}

// The open question's message read "3/3 approvals" beside the Answer
// button; it must count the agreeing answers, 2/3.
func TestQuestionMessageCountsOnlyAgreeingAnswers(t *testing.T) {
	if s, _ := renderedText(t, disagreeingQuestion(), ""); strings.Contains(s, "3/3 approvals") || !strings.Contains(s, "2/3 approvals") {
		t.Fatalf("the open question's message must say 2/3 approvals (two agreeing answers), not 3/3:\n%s", s)
	}
}

// Beside "2/3 approvals" the open question's message listed three
// approvals alike: nothing said that the Finance Lead's ("us") is not one
// of the two agreeing ("eu"). Its line must say so, and only its.
func TestQuestionMessageMarksAnApprovalThatAnsweredOtherwise(t *testing.T) {
	s, lead := renderedText(t, disagreeingQuestion(), "Finance Lead")
	if !strings.Contains(lead, "answered otherwise") || strings.Count(s, "answered otherwise") != 1 {
		t.Fatalf("the Finance Lead's line %q must say their answers are not the agreeing ones, and only theirs:\n%s", lead, s)
	}
}
