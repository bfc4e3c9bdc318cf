package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// An approver who amends a call in the dashboard approves other arguments
// than the ones the agent asked for, and the tool receives those. The
// Slack message was updated to "Approved" under the agent's arguments,
// with nothing saying that they were not what ran: everyone reading the
// channel believed the refund went to cust-1. It must say the arguments
// were amended, and show what the tool received.
func TestResolvedMessageShowsAmendedArguments(t *testing.T) {
	w := newWorld(t)
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)

	req := w.approval(t, id)
	tok := approval.NewToken(req, w.cfo.Public(), approval.DecisionApproved, w.clk.Now(), time.Minute)
	tok.AmendedArguments = json.RawMessage(`{"amount":300,"currency":"USD","customer_id":"cust-2"}`)
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
	upd := w.updated(t, "1700000000.000001", "cust-2")
	if !strings.Contains(upd.Get("blocks"), "amended") {
		t.Fatalf("the update does not say the arguments were amended: %s", upd.Get("blocks"))
	}
}
