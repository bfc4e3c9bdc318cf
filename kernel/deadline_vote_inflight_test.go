package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A human denial is verified one second before the deadline (approval.
// Verify judges a vote at its arrival: in time), and its commit is slow to
// start (a loaded store, a reload holding the policy lock). The deadline
// fires meanwhile with timeout_action = auto_approve_advisory. The kernel's
// advisory vote, for calls nobody decided, must not overtake the denial
// that arrived before the deadline: it once committed first, ran the call,
// and the approver who denied it in time was told their vote came after
// the request was resolved.
func TestAdvisoryWaitsForADenialThatArrivedInTime(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	gs := &gateStore{gates: map[int64]chan struct{}{}, seen: map[int64]chan struct{}{}}
	tool := &scriptedTool{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(`
[[servers]]
id = "pay"
transport = "builtin"
[[grants]]
id = "deploys"
server = "pay"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`, financeLead.Public()), Dispatcher: tool, Clock: clk,
		Server: "pay", Grants: []string{"deploys"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	out := w.Submit(t, "echo", `{"env":"production"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v", out)
	}
	id := out.ApprovalRequestID
	humanAt, humanGo := gs.gate(gs.n.Load() + 1) // the human's deny vote commit
	clk.Advance(599 * time.Second)               // the human's denial arrives a second before the deadline
	deny := w.Token(t, id, financeLead, approval.DecisionDenied, nil)
	done := make(chan error, 1)
	go func() { _, err := w.Kernel.Respond(context.Background(), id, deny, "", ""); done <- err }()
	<-humanAt
	clk.Advance(time.Second) // the deadline fires while the denial's commit waits
	// The deadline's action gets every chance to run ahead of the denial
	// (it did: the request was approved before the denial was released).
	for i := 0; i < 40; i++ {
		if r, _ := w.Kernel.Approval(id); r.Status != approval.StatusPending {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(humanGo)
	err := <-done
	eventually(t, "request resolved", func() bool { r, _ := w.Kernel.Approval(id); return r.Status != approval.StatusPending })
	w.Kernel.WaitSettles()
	rec, _ := w.Kernel.Call(out.RequestID)
	r, _ := w.Kernel.Approval(id)
	if n := len(tool.deliveries(out.RequestID)); n != 0 || rec.Status == kernel.StatusAllowed || r.Status == approval.StatusApproved || err != nil {
		t.Fatalf("the Finance Lead denied this call a second before its deadline, yet the advisory auto-approval ran it: "+
			"dispatched %d, call %s, request %s (decided by %q); the denial was answered %v", n, rec.Status, r.Status, decider(r), err)
	}
}

func decider(r *approval.Request) string {
	if r == nil || r.Resolution == nil {
		return ""
	}
	return r.Resolution.DecidedBy
}
