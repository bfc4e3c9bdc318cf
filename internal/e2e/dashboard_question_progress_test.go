package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// askQuorumGrant is a question needing three agreeing answers, from the
// Finance Lead, the CFO, the SRE lead and, withDBA, the DBA.
func askQuorumGrant(sreKey string, withDBA bool) string {
	s := `
[[grants]]
id = "ask-quorum"
server = "assistant"
tool = "ask"
[grants.approval]
timeout_seconds = 3600
quorum = 3
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "` + cfoKey + `"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "` + sreKey + `"
display_name = "SRE"
`
	if withDBA {
		s += `[[grants.approval.approvers]]
public_key = "` + dbaKey + `"
display_name = "DBA"
`
	}
	return s
}

// TestDashboardCountsOnlyAgreeingAnswersOfAQuestion: the DBA answers
// "us"; a reload removes the DBA and the CFO answers "eu"; a reload trusts
// the DBA again and the SRE answers "eu". Three counted approvals, but
// only two agree: the kernel keeps the question open until a third "eu"
// (quorum 3). The Finance Lead's card read "3 of 3 approvals" (all pips
// on) beside the form still asking for an answer; it must read 2 of 3.
func TestDashboardCountsOnlyAgreeingAnswersOfAQuestion(t *testing.T) {
	load := func(name string) keys.PrivateKey {
		k, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", name))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	dba, cfo, sre := load("dba.pem"), load("cfo.pem"), load("sre-lead.pem")
	sreKey := sre.Public().String()
	lk, open := dashboardAsLeadWith(t, askQuorumGrant(sreKey, true))
	ctx := context.Background()
	capRaw, _, err := lk.k.IssueCapability(lk.agent.Public(), []string{"ask-quorum"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := &kernel.ToolCall{RequestID: fmt.Sprintf("req-q-%d", time.Now().UnixNano()), Capability: capRaw, Server: "assistant", Tool: "ask",
		Arguments: json.RawMessage(`{"questions":[{"id":"region","text":"Deploy to which region?","type":"single","options":["eu","us"]}]}`)}
	testkit.Sign(t, c, lk.agent, time.Now())
	out, err := lk.k.Submit(ctx, c)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v %v", out, err)
	}
	id := out.ApprovalRequestID
	answer := func(who keys.PrivateKey, region string) *kernel.RespondResult {
		t.Helper()
		tok := testkit.SignToken(t, lk.k, time.Now(), id, who, approval.DecisionApproved, func(tok *approval.Token) {
			tok.Answers = json.RawMessage(`{"region":"` + region + `"}`)
		})
		res, err := lk.k.Respond(ctx, id, tok, "", "api")
		if err != nil {
			t.Fatalf("answer %s: %v", region, err)
		}
		return res
	}
	answer(dba, "us")
	lk.reloadDashboardPolicy(t, askQuorumGrant(sreKey, false))
	answer(cfo, "eu")
	lk.reloadDashboardPolicy(t, askQuorumGrant(sreKey, true))
	lk.k.WaitRecovery(ctx)
	if res := answer(sre, "eu"); res.Outcome != approval.StatusPending {
		t.Fatalf("the SRE's answer: %+v; want the question still open (two agreeing answers of three)", res)
	}

	b, sel := open(), card(id)
	browse(t, b, "the card", chromedp.WaitVisible(css(sel)))
	got := read(t, b, "the card's progress", chromedp.Evaluate[dashVotes](fmt.Sprintf(readVotes, sel)))
	if !strings.Contains(got.Progress, "2 of 3") {
		t.Fatalf("the open question's card reads %q (votes %q); want 2 of 3 approvals: only the two \"eu\" answers agree", got.Progress, got.Lines)
	}
	// Beside "2 of 3" the card listed three approvals alike: the DBA's
	// ("us"), not one of the two agreeing, must say so, and only it.
	marked := 0
	for _, l := range got.Lines {
		if strings.Contains(l, approval.AnsweredOtherwiseNote) {
			marked++
		}
	}
	if len(got.Lines) != 3 || !strings.Contains(got.Lines[0], "DBA") || !strings.Contains(got.Lines[0], approval.AnsweredOtherwiseNote) || marked != 1 {
		t.Fatalf("the open question's card lists votes %q; want the DBA's (\"us\") marked %q, and only it", got.Lines, approval.AnsweredOtherwiseNote)
	}
}
