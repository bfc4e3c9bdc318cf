package kernel_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// heldNotifier is a kernel.TellingNotifier whose channels finish with an
// announcement only when released: a slow Slack, an SMTP server retrying.
type heldNotifier struct {
	mu    sync.Mutex
	named [][]string // the approvers each announcement named
	held  []func(bool)
}

func (n *heldNotifier) Notify(event string, req *approval.Request) {
	n.NotifyThen(event, req, func(bool) {})
}

func (n *heldNotifier) NotifyThen(event string, req *approval.Request, told func(bool)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if event == "approval.resolved" {
		return
	}
	n.named = append(n.named, slices.Clone(req.TrustedApprovers))
	n.held = append(n.held, told)
}

// release finishes every announcement held so far.
func (n *heldNotifier) release() {
	n.mu.Lock()
	held := n.held
	n.held = nil
	n.mu.Unlock()
	for _, told := range held {
		told(true)
	}
}

func (n *heldNotifier) told(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.ContainsFunc(n.named, func(ks []string) bool { return slices.Contains(ks, key) })
}

// A request is marked told once its channels finish with its announcement
// (kernel.TellingNotifier). A reload that adds an approver while that
// announcement is on its way marks the tier untold, but its announcement
// gives way to the one in flight (the tier is being told), and that one,
// finishing, marked the tier told: the approver the reload added was never
// told, and the deadline acted as though they had been.
func TestAReloadAddingAnApproverWhileTheAnnouncementIsOnItsWayTellsThem(t *testing.T) {
	n := &heldNotifier{}
	w, _, _ := parkReloadWorld(t, parkReloadPolicy(t, "refunds", "", false), 0, n)
	ctx := context.Background()
	out := w.SubmitCall(t, w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, ""))
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	// The announcement (naming the Finance Lead) is on its way; a reload
	// adds the CFO.
	if err := w.Kernel.ApplyPolicy(ctx, parkReloadPolicy(t, "refunds", "", true)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !n.told(cfo.Public().String()) && time.Now().Before(deadline) {
		n.release()
		time.Sleep(5 * time.Millisecond)
	}
	req, _ := w.Kernel.Approval(out.ApprovalRequestID)
	if !n.told(cfo.Public().String()) {
		t.Fatalf("the CFO, added by a reload while the request's announcement was on its way, was never told of it; "+
			"the request is marked told (notified %d at tier %d), trusting %d approvers", req.Notified, req.Tier, len(req.TrustedApprovers))
	}
	n.release()
	for !told(w.Kernel, out.ApprovalRequestID) && time.Now().Before(deadline) {
		n.release()
		time.Sleep(5 * time.Millisecond)
	}
	if !told(w.Kernel, out.ApprovalRequestID) {
		t.Fatal("the announcement naming the CFO finished, yet the request is not marked told")
	}
}

// told reports whether request id's current tier is marked told.
func told(w interface {
	Approval(string) (*approval.Request, error)
}, id string) bool {
	req, err := w.Approval(id)
	return err == nil && req.Notified > req.Tier
}
