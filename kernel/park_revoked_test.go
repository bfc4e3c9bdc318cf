package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// A revocation that commits after a new call read its capability as live
// but before the call is parked stops the call there: it is denied (guard
// capability), no approval request is opened and no approver is asked
// about a call the kernel already stopped trusting. The park, like an
// allow, reads the revocation again inside its own commit.
func TestRevocationBeforeTheParkCommitDenies(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	var wrap *revokeBeforeNthUpdate
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(testPolicy, approver.Public()), Clock: clk, Dispatcher: &fakeDispatcher{},
		Agent: testkit.Key(agentK), Grants: []string{"refunds", "echo"},
		WrapStore: func(s kernel.Store) kernel.Store { wrap = &revokeBeforeNthUpdate{Store: s}; return wrap }})
	// Update 1 is suspend's standing-approval claim (it finds none); the
	// revocation commits before Update 2, the park.
	wrap.capID, wrap.n = w.Cap.ID, 2
	wrap.armed.Store(true)
	out, err := w.Kernel.Submit(context.Background(), w.Call(t, "issue_refund",
		`{"customer_id":"c","amount":450,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != kernel.StatusDenied || out.ApprovalRequestID != "" {
		t.Fatalf("capability revoked before the park committed, yet the call is %s (approval %q)", out.Status, out.ApprovalRequestID)
	}
	if r := w.Receipt(t, out.ReceiptID); r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardCapability {
		t.Fatalf("receipt %+v, want a deny by guard %s", r.Decision, kernel.GuardCapability)
	}
	if list, err := w.Kernel.ListPending(kernel.PendingFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("pending after a refused park: %d %v", len(list), err)
	}
}
