package cli

import (
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// TestWatchQueuedRequestTakesItsNewestView: while one request is prompted,
// the next waits in the queue. It escalated meanwhile (a new tier and
// deadline, announced as approval.escalated), but the queue kept the view
// it was first seen with, and the watch prompted with it: the approver
// read tier 1 and a deadline already passed. A queued request takes each
// newer view as it arrives, in its place; a view older than the queued one
// (a reconnect's replay crossing the escalation) is not taken; and a
// request whose new tier no longer lists this key leaves the queue.
func TestWatchQueuedRequestTakesItsNewestView(t *testing.T) {
	const me, other = "ed25519:me", "ed25519:other"
	view := func(id string, tier int, expires int64, approvers ...string) kernel.Event {
		typ := kernel.EventApprovalRequested
		if tier > 0 {
			typ = kernel.EventApprovalEscalated
		}
		return kernel.Event{Type: typ, Approval: &approval.Request{ApprovalID: id, Status: approval.StatusPending,
			Tier: tier, ExpiresAt: expires, TrustedApprovers: approvers}}
	}
	w := &watcher{pub: me, handled: map[string]bool{}, resolved: map[string]bool{}}
	w.observe(view("ar-a", 0, 100, me))
	w.observe(view("ar-b", 0, 100, me))
	w.observe(view("ar-c", 0, 100, me))
	w.observe(view("ar-b", 1, 200, me, other)) // escalated
	w.observe(view("ar-b", 0, 100, me))        // a replay older than it
	w.observe(view("ar-c", 1, 200, other))     // escalated past this key
	if b := w.queue[1]; b.ApprovalID != "ar-b" || b.Tier != 1 || b.ExpiresAt != 200 {
		t.Fatalf("queued %s is shown at tier %d, deadline %d: the view it was first seen with, not its escalation's (ar-b, tier 1, 200)", b.ApprovalID, b.Tier, b.ExpiresAt)
	}
	if len(w.queue) != 2 || w.queue[0].ApprovalID != "ar-a" {
		t.Fatalf("queue %v: ar-c escalated past this key and stays", ids(w.queue))
	}
}

func ids(q []*approval.Request) []string {
	var out []string
	for _, r := range q {
		out = append(out, r.ApprovalID)
	}
	return out
}
