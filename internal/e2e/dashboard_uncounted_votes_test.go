package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// quorumGrant is a grant whose refunds need two approvals: the Finance
// Lead, the CFO and, withDBA, the DBA (whose display name and note hold
// markup: the page must draw them as text).
func quorumGrant(withDBA bool) string {
	s := `
[[grants]]
id = "refunds-quorum"
server = "payments"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
quorum = 2
channels = ["dashboard"]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "` + cfoKey + `"
display_name = "CFO"
`
	if withDBA {
		s += `[[grants.approval.approvers]]
public_key = "` + dbaKey + `"
display_name = "DBA <i>on call</i>"
`
	}
	return s
}

// dashVotes is what a card says of its votes.
type dashVotes struct {
	Lines    []string // each vote's line, as text
	Markup   int      // elements drawn from the votes' text (must be none)
	Progress string   // the quorum line
}

const readVotes = `(() => { const c = document.querySelector('%s');
	const lines = c ? [...c.querySelectorAll('.votes li')] : [];
	return {Lines: lines.map((l) => l.textContent), Markup: c ? c.querySelectorAll('.votes i, .votes b').length : 0,
		Progress: c ? (c.querySelector('.quorum') || {}).textContent || '' : ''}; })()`

// TestDashboardMarksVotesThatDoNotCount: a request needing two approvals
// has the DBA's approval; a reload removes the DBA from the grant. The
// vote stays on the request, but the kernel no longer counts it (receipts
// name it "uncounted"; Slack's message says "not counted: no longer an
// approver of this request"). The dashboard listed no votes at all, and
// kept drawing the card as it was before the reload ("1 of 2 approvals"):
// its redraw looked only at the number of votes, the tier and the
// deadline, not at who may decide. The card must list every vote, the
// DBA's marked as not counted, beside a progress that leaves it out.
func TestDashboardMarksVotesThatDoNotCount(t *testing.T) {
	lk, open := dashboardAsLeadWith(t, quorumGrant(true))
	capRaw, _, err := lk.k.IssueCapability(lk.agent.Public(), []string{"refunds-quorum"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := lk.submitWith(t, capRaw, "refunds-quorum", "issue_refund", `{"order":"A-800","amount":800,"currency":"USD"}`,
		`{"purpose":"Refund a double charge","max_amount":{"units":800,"currency":"USD"}}`)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", out)
	}
	id := out.ApprovalRequestID
	dba, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", "dba.pem"))
	if err != nil {
		t.Fatal(err)
	}
	const note = `checked <b>twice</b>`
	tok := testkit.SignToken(t, lk.k, time.Now(), id, dba, approval.DecisionApproved, func(tok *approval.Token) { tok.Note = note })
	if res, err := lk.k.Respond(context.Background(), id, tok, "", "api"); err != nil || res.Outcome == approval.StatusApproved {
		t.Fatalf("the DBA's vote: %+v %v; want it recorded, the request still pending", res, err)
	}

	ctx, c := open(), card(id)
	browse(t, ctx, "the card", chromedp.WaitVisible(css(c)))
	before := read(t, ctx, "votes before the reload", chromedp.Evaluate[dashVotes](fmt.Sprintf(readVotes, c)))
	if len(before.Lines) != 1 || !strings.Contains(before.Lines[0], "DBA <i>on call</i>") || !strings.Contains(before.Lines[0], note) ||
		strings.Contains(before.Lines[0], "not counted") || before.Markup != 0 || !strings.Contains(before.Progress, "1 of 2") {
		t.Errorf("before the reload the card shows votes %q (%d elements drawn from their text), progress %q; "+
			"want the DBA's approval listed as written, with its note, counted: 1 of 2", before.Lines, before.Markup, before.Progress)
	}

	lk.reloadDashboardPolicy(t, quorumGrant(false))
	// The JSON the page reads (GET /approvals/{id}, as the stream carries
	// it): the DBA's vote is still on the request, and the DBA is no
	// longer among those it trusts.
	var view struct {
		Request approval.Request `json:"request"`
	}
	lk.get(t, "/approvals/"+id, &view)
	voted := slices.ContainsFunc(view.Request.Votes, func(v approval.Vote) bool { return v.Approver == dbaKey })
	if view.Request.Status != approval.StatusPending || !voted || view.Request.Trusts(dbaKey) || !view.Request.Trusts(financeLeadKey) {
		raw, _ := json.Marshal(view.Request)
		t.Fatalf("after the reload GET /approvals/%s reads %s; want it pending, the DBA's vote kept and the DBA no longer trusted", id, raw)
	}

	after := read(t, ctx, "votes after the reload", chromedp.Evaluate[dashVotes](`new Promise((done) => {
		const look = () => { const v = `+fmt.Sprintf(readVotes, c)+`;
			if (v.Progress.includes('0 of 2')) done(v); else setTimeout(look, 50); };
		look(); setTimeout(() => done(`+fmt.Sprintf(readVotes, c)+`), 15000); })`, chromedp.EvalAwaitPromise))
	if !strings.Contains(after.Progress, "0 of 2") {
		t.Errorf("after the reload the card's progress reads %q; want 0 of 2: the kernel no longer counts the DBA's approval", after.Progress)
	}
	if len(after.Lines) != 1 || !strings.Contains(after.Lines[0], "DBA <i>on call</i>") ||
		!strings.Contains(after.Lines[0], approval.NoLongerApproverNote) || after.Markup != 0 {
		t.Errorf("after the reload the card shows votes %q (%d elements drawn from their text); "+
			"want the DBA's approval listed and marked %q", after.Lines, after.Markup, approval.NoLongerApproverNote)
	}
}
