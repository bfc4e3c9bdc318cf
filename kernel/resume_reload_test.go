package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// An approved call resumes under the policy in force: its grant must still
// cover it (resume.go). The resume read the policy before its checks and
// committed the allow decision later; a reload in between that removed the
// grant was ignored and the call ran under a grant no longer in force.
func TestResumeHonoursAReloadBeforeItsAllowCommit(t *testing.T) {
	text := strings.Replace(fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "deny"),
		`id = "refunds"`, `id = "refunds-v2"`, 1)
	grantGone, err := policy.Parse([]byte(text), "renamed.toml")
	if err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: disp, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Respond reads the request (View 1), commits the vote, and the resume
	// reads the policy, then whether the capability was revoked (View 2),
	// then commits the allow decision. The reload lands at View 2.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, grantGone); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if views.Load() != 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardScope ||
		len(disp.got(out.RequestID)) != 0 {
		t.Fatalf("after a reload removed its grant, the approved call answered %+v (call %+v, err %v); the tool ran %d time(s)",
			res, res.Call, err, len(disp.got(out.RequestID)))
	}
}
