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

// revokeBeforeStore runs a hook once, just before the next Update after
// it is set (the commit that follows the reads it wants to race).
type revokeBeforeStore struct {
	kernel.Store
	beforeView   atomic.Pointer[func()]
	beforeUpdate atomic.Pointer[func()]
}

func (s *revokeBeforeStore) View(fn func(kernel.ReadTx) error) error {
	if f := s.beforeView.Swap(nil); f != nil {
		(*f)()
	}
	return s.Store.View(fn)
}

func (s *revokeBeforeStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if f := s.beforeUpdate.Swap(nil); f != nil {
		(*f)()
	}
	return s.Store.Update(ctx, fn)
}

// An approved confirm answers its agent "confirmed": the answer is the
// call's whole effect. A revocation that commits after the resume read
// the capability unrevoked but before that answer commits must deny it,
// as commitAllow denies a tool call (errRevokedAtDecision): the
// revocation is durable first, so nothing may be allowed after it.
// finish committed the answer without reading revocation again.
func TestConfirmRevokedBeforeItsAnswerCommitsIsDenied(t *testing.T) {
	text := fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 300
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`, financeLead.Public())
	rs := &revokeBeforeStore{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: text, Clock: clock.NewFake(time.Unix(1_900_000_000, 0)),
		Server: "demo", Grants: []string{"confirm"},
		WrapStore: func(s kernel.Store) kernel.Store { rs.Store = s; return rs }})
	ctx := context.Background()
	out := w.Submit(t, "confirm", `{"prompt":"Wire the quarterly payout?"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Respond reads the request (View 1) and commits the vote; the resume
	// reads the revocation (View 2), then commits the answer: the operator's
	// revocation commits just before that.
	var views atomic.Int64
	revoked := false
	revoke := func() {
		if err := w.Kernel.Revoke(ctx, w.Cap.ID); err != nil {
			t.Error(err)
		}
		revoked = true
	}
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			rs.beforeUpdate.Store(&revoke)
			return
		}
		rs.beforeView.Store(&hook)
	}
	rs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if !revoked {
		t.Fatalf("the revocation never landed (%d views)", views.Load())
	}
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardCapability {
		t.Fatalf("a confirm whose capability was revoked before its answer committed answered %+v (call %+v, err %v)", res, res.Call, err)
	}
}

// The same window for a reload: one that removes the confirm's grant
// after the resume judged the answer by the policy it replaces, before
// the answer commits. A tool call's allow commits only while the policy
// that judged it is in force (TestResumeHonoursAReloadBeforeItsAllowCommit);
// the answer committed under a grant no longer in force.
func TestConfirmHonoursAReloadBeforeItsAnswerCommits(t *testing.T) {
	grant := `
[[grants]]
id = "%s"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 300
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`
	text := "[[servers]]\nid = \"demo\"\ntransport = \"builtin\"\n" + fmt.Sprintf(grant, "confirm", financeLead.Public())
	rs := &revokeBeforeStore{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: text, Clock: clock.NewFake(time.Unix(1_900_000_000, 0)),
		Server: "demo", Grants: []string{"confirm"},
		WrapStore: func(s kernel.Store) kernel.Store { rs.Store = s; return rs }})
	gone, err := policy.Parse([]byte(strings.Replace(text, `id = "confirm"`, `id = "confirm-v2"`, 1)), "renamed.toml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	out := w.Submit(t, "confirm", `{"prompt":"Wire the quarterly payout?"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	// Respond reads the request (View 1) and commits the vote; the resume
	// reads the policy, then the revocation (View 2): the reload lands
	// there, after the policy that judges the answer was read.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, gone); err != nil {
				t.Error(err)
			}
			return
		}
		rs.beforeView.Store(&hook)
	}
	rs.beforeView.Store(&hook)
	res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if views.Load() != 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || res.Call == nil || res.Call.Status != kernel.StatusDenied || res.Call.Guard != kernel.GuardScope {
		t.Fatalf("a confirm whose grant a reload removed before its answer committed answered %+v (call %+v, err %v)", res, res.Call, err)
	}
}
