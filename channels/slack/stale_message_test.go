package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/kernel"
)

// A decision whose approval.resolved never reached Slack (chiod stopped
// after the vote's commit: the hub's queue is in memory, and a start
// re-announces pending requests only) left the message offering Approve /
// Deny for good: a click on it answered "already approved" and left the
// buttons for every other approver. The click must bring the message up to
// the decision.
func TestClickOnDecidedRequestUpdatesItsMessage(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)

	// The CFO approves in the dashboard; chiod dies before Slack is told.
	w.lost.Store(true)
	req := w.approval(t, id)
	tok := approval.NewToken(req, w.cfo.Public(), approval.DecisionApproved, w.clk.Now(), time.Minute)
	raw, err := tok.Sign(w.cfo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: approval.DecisionApproved, Channel: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	if req := w.approval(t, id); req.Status != approval.StatusApproved {
		t.Fatalf("not approved: %s", req.Status)
	}

	// chiod starts again: the Slack channel finds its message on disk.
	restarted, err := slack.New(*w.tw.Policy.Channels.Slack, slack.Options{PublicURL: publicURL, DataDir: w.dataDir,
		Policy: w.tw.Policy, Clock: w.clk, Getenv: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restarted.Close() })
	w.handler = restarted.InteractionsHandler(w.k)

	if code := w.click(lead, slack.ActionDeny, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if e := w.ephemeralTo(leadID); len(e) != 1 || !strings.Contains(e[0], "already approved") {
		t.Fatalf("ephemeral: %v", e)
	}
	restarted.Close() // the click's work is done
	upd := w.updated(t, "1700000000.000001", "Approved")
	if strings.Contains(upd.Get("blocks"), slack.ActionDeny) || !strings.Contains(upd.Get("blocks"), "CFO *approved* via dashboard") {
		t.Fatalf("update: %s", upd.Get("blocks"))
	}
	if req := w.approval(t, id); req.Status != approval.StatusApproved || len(req.Votes) != 1 {
		t.Fatalf("changed: %+v", req)
	}
}

// The same on a quorum of two: the Finance Lead's custodial vote committed
// and chiod stopped before updating the message (quorum progress is shown
// by the click itself, no event carries it). The message kept "0/2
// approvals"; a second click answered "You have already voted" and left it
// so, telling the CFO that nobody had approved yet. It must show the vote.
func TestClickAlreadyVotedUpdatesItsMessage(t *testing.T) {
	text := strings.Replace(testPolicy, "slack_custodial = true\n", "slack_custodial = true\nquorum = 2\n", 1)
	w := worldWith(t, text, []string{"refunds", "echo"}, "req-slack-q2-")
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)

	// The vote a custodial click signs, recorded; Slack never hears of it.
	req := w.approval(t, id)
	if req.Quorum != 2 {
		t.Fatalf("quorum %d", req.Quorum)
	}
	tok := approval.NewToken(req, w.lead.Public(), approval.DecisionApproved, w.clk.Now(), time.Minute)
	raw, err := tok.Sign(w.lead)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: approval.DecisionApproved, Channel: slack.Name, Custodial: true}); err != nil {
		t.Fatal(err)
	}

	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if e := w.ephemeralTo(leadID); len(e) != 1 || !strings.Contains(e[0], "already voted") {
		t.Fatalf("ephemeral: %v", e)
	}
	w.ch.Close() // the click's work is done
	upd := w.updated(t, "1700000000.000001", "1/2 approvals")
	if !strings.Contains(upd.Get("blocks"), "Finance Lead *approved* via slack") || !strings.Contains(upd.Get("blocks"), slack.ActionApprove) {
		t.Fatalf("update: %s", upd.Get("blocks"))
	}
	if req := w.approval(t, id); req.Status != approval.StatusPending || len(req.Votes) != 1 {
		t.Fatalf("changed: %+v", req)
	}
}
