package slack

import (
	"testing"

	"github.com/chiokernel/chio/approval"
)

// The notification text (the push and desktop notification, and what
// screen readers say) is the title without its emoji, then the summary.
// Only ":bell: " was taken off: every other title lost only its first
// colon, so an escalation's push read "rotating_light: Approval escalated
// to tier 2: …" and a decision's "white_check_mark: Approved: …".
func TestNotificationTextHasNoEmojiCode(t *testing.T) {
	for _, tc := range []struct {
		status string
		tier   int
		want   string
	}{
		{approval.StatusPending, 0, "Approval requested: refund order 8834"},
		{approval.StatusPending, 1, "Approval escalated to tier 2: refund order 8834"},
		{approval.StatusApproved, 0, "Approved: refund order 8834"},
		{approval.StatusDenied, 0, "Denied: refund order 8834"},
		{approval.StatusExpired, 0, "Expired (no decision before the deadline): refund order 8834"},
		{approval.StatusCancelled, 0, "Cancelled: refund order 8834"},
	} {
		req := &approval.Request{ApprovalID: "ar-0123456789", Kind: approval.KindToolCall, Status: tc.status,
			Tier: tc.tier, Quorum: 1, Summary: "refund order 8834", ToolServer: "demo", ToolName: "issue_refund"}
		if _, text, _ := (&Channel{}).render(req); text != tc.want {
			t.Errorf("%s at tier %d: notification text %q, want %q", tc.status, tc.tier+1, text, tc.want)
		}
	}
}
