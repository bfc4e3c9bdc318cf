package kernel

import (
	"context"

	"github.com/chiokernel/chio/approval"
)

// AnnouncementAbandoned is told (by the notification hub, as chiod shuts
// down) that the announcement of req (event) was cut off before a channel
// delivered it. announceDurably marked the request's tier told when it
// handed the announcement over; a request still pending at that tier is
// marked untold again, so the next start (or a heal, or another replica's
// sweep) announces it and gives its approvers the tier's time
// (announceIfUntold). Without this, nobody would ever hear of it, and its
// deadline would act (auto_approve_advisory: run the call) with no human
// told. Other channels that did deliver it are told again: a second
// announcement, never a missed one. A request that moved on (voted,
// escalated, resolved) is left as it is.
func (k *Kernel) AnnouncementAbandoned(ctx context.Context, event string, req *approval.Request) error {
	if event != EventApprovalRequested && event != EventApprovalEscalated {
		return nil // a resolution: nothing waits on it
	}
	return k.update(context.WithoutCancel(ctx), func(tx Tx) error {
		cur, err := tx.Approval(req.ApprovalID)
		if err != nil || cur.Status != approval.StatusPending || cur.Tier != req.Tier || cur.Notified <= cur.Tier {
			return err
		}
		cur.Notified = cur.Tier
		return tx.PutApproval(cur)
	})
}
