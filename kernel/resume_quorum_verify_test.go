package kernel_test

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// An approved call that a reload raising the quorum lands behind is denied
// when it resumes (approved_now.go): its one approval no longer meets the
// quorum in force. That denial is not a person's: the deciding vote the
// receipt names APPROVED. Signed with guard human-approval, it read as a
// human denial (`chio receipt list --guard human-approval`), and
// `chio receipt verify` of the kernel's own honest log reported "receipt
// is deny but the deciding token ... says "approved"". Found by the
// concurrency stress (stress_test.go, seeds 1 and 2).
func TestResumeDenialShortOfQuorumVerifies(t *testing.T) {
	kkey := keys.FromSeed(bytes.Repeat([]byte{8}, 32))
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	log := receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour, Now: fake.Now})
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: disp, Clock: fake,
		KernelKey: testkit.Key(kkey), Log: log, Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Respond reads the request (View 1) and commits the vote under
	// quorum = 1; the resume then reads the capability (View 2), where the
	// reload to quorum = 2 lands.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, quorumPolicy(t, 2, 1, "deny")); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if views.Load() < 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusDenied || len(disp.got(out.RequestID)) != 0 {
		t.Fatalf("after a reload to quorum = 2, the approved call answered %+v (call %+v, err %v); the tool ran %d time(s)",
			res, res.Call, err, len(disp.got(out.RequestID)))
	}
	w.Kernel.WaitSettles()
	if _, _, err := log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := w.Store.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: kkey.Public()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var ps []string
		for _, p := range rep.Problems {
			ps = append(ps, p.String())
		}
		t.Fatalf("the kernel's honest log does not verify (call denied by %s: %s):\n%s", res.Call.Guard, res.Call.Reason, strings.Join(ps, "\n"))
	}
	if res.Call.Guard == kernel.GuardHumanApproval {
		t.Fatalf("denied by guard %s (%s), but no person denied it", res.Call.Guard, res.Call.Reason)
	}
}
