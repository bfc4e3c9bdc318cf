package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A park or a deny commits only while the policy that judged it is in
// force, as an allow does (execute_reload_test.go). decide reads the
// policy, runs the guards with it and commits later; a reload landing in
// between (after its reconcile of the pending requests had run) was
// ignored: the call was parked with the approvers, quorum and timeout of
// the policy the reload replaced, and its channels were told, or it was
// denied by a rule no longer in force.

// parkReloadPolicy is voteOrderPolicy (quorum 1) with first-N approval,
// so decide reads the grant's count from the store (View 2, where the
// tests land their reload), the grant renamed to grantID, deny_when if
// given, and the listed approvers among the Finance Lead and the CFO.
func parkReloadPolicy(t *testing.T, grantID, denyWhen string, withCFO bool) *policy.Policy {
	t.Helper()
	constraints := "require_approval_first_n = 1"
	if denyWhen != "" {
		constraints += "\ndeny_when = " + fmt.Sprintf("%q", denyWhen)
	}
	text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "deny")
	text = strings.Replace(text, "require_approval_always = true", constraints, 1)
	text = strings.Replace(text, `id = "refunds"`, `id = "`+grantID+`"`, 1)
	if !withCFO {
		text = text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
	}
	p, err := policy.Parse([]byte(text), "park-reload.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// approversNotifier records whom each announcement names as approvers.
type approversNotifier struct {
	mu   sync.Mutex
	told [][]string
}

func (n *approversNotifier) Notify(event string, req *approval.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.told = append(n.told, slices.Clone(req.TrustedApprovers))
}

func (n *approversNotifier) named(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ks := range n.told {
		if slices.Contains(ks, key) {
			return true
		}
	}
	return false
}

// submitWithReloadAtView2 submits one refund call whose decision is
// interrupted, at its first-N read (View 2), by a reload to next.
func submitWithReloadAtView2(t *testing.T, w *testkit.World, gs *gatedStore, next *policy.Policy, args string) (*kernel.ToolCall, *kernel.Outcome, error) {
	t.Helper()
	ctx := context.Background()
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, next); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	c := w.Call(t, "issue_refund", args, "")
	out, err := w.Kernel.Submit(ctx, c)
	if views.Load() < 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	return c, out, err
}

func parkReloadWorld(t *testing.T, p *policy.Policy, priorCalls uint64, n kernel.Notifier) (*testkit.World, *gatedStore, *argsDispatcher) {
	t.Helper()
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: disp, Clock: clock.NewFake(time.Unix(1_900_000_000, 0)),
		Server: "pay", Grants: []string{"refunds"}, Notifier: n,
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	if priorCalls > 0 {
		if err := w.Store.Update(context.Background(), func(tx kernel.Tx) error {
			return tx.SetCounter(kernel.FirstNKey("refunds", w.Agent.Public().String()), priorCalls)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return w, gs, disp
}

// (a) A reload that takes a compromised approver key (the CFO's) out of
// the grant lands while a call is decided: the call was parked with the
// CFO still trusted, and the CFO's channels were told of it; no reconcile
// ever removed the key (the reload's had already run).
func TestParkHonoursAReloadThatRemovedAnApprover(t *testing.T) {
	n := &approversNotifier{}
	w, gs, _ := parkReloadWorld(t, parkReloadPolicy(t, "refunds", "", true), 0, n)
	_, out, err := submitWithReloadAtView2(t, w, gs, parkReloadPolicy(t, "refunds", "", false),
		`{"amount":500,"currency":"USD","customer_id":"c"}`)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("the call answered %+v (err %v); want it parked", out, err)
	}
	req, err := w.Kernel.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	removed := cfo.Public().String()
	if slices.Contains(req.TrustedApprovers, removed) {
		t.Errorf("the request was parked trusting %v, after a reload removed the CFO", req.TrustedApprovers)
	}
	if n.named(removed) {
		t.Errorf("the channels were told of the request with the CFO among its approvers (%v), after a reload removed the CFO", n.told)
	}
}

// (b) A reload that removes the call's grant lands while the call is
// decided: the call was parked under the removed grant and waited for its
// deadline instead of being judged by the policy in force (no grant:
// denied).
func TestParkHonoursAReloadThatRemovedItsGrant(t *testing.T) {
	w, gs, disp := parkReloadWorld(t, parkReloadPolicy(t, "refunds", "", true), 0, nil)
	c, out, err := submitWithReloadAtView2(t, w, gs, parkReloadPolicy(t, "refunds-v2", "", true),
		`{"amount":500,"currency":"USD","customer_id":"c"}`)
	if err != nil || out.Status != kernel.StatusDenied || len(disp.got(c.RequestID)) != 0 {
		t.Fatalf("after a reload removed its grant, the call answered %+v (err %v); want denied", out, err)
	}
	pending, err := w.Kernel.ListPending(kernel.PendingFilter{})
	if err != nil || len(pending) != 0 {
		t.Fatalf("%d request(s) left pending (err %v) under a grant no longer in force", len(pending), err)
	}
}

// (c) A reload that drops the deny_when rule denying a call lands while
// the call is decided: the call was denied by the dropped rule, its
// receipt naming the replaced policy, with the new one already in force.
func TestDenyHonoursAReloadThatDroppedItsRule(t *testing.T) {
	w, gs, disp := parkReloadWorld(t, parkReloadPolicy(t, "refunds", "args.amount > 100", true), 1, nil)
	c, out, err := submitWithReloadAtView2(t, w, gs, parkReloadPolicy(t, "refunds", "", true),
		`{"amount":500,"currency":"USD","customer_id":"c"}`)
	if err != nil || out.Status != kernel.StatusAllowed || len(disp.got(c.RequestID)) != 1 {
		t.Fatalf("after a reload dropped the rule denying it, the call answered %+v (err %v); the tool ran %d time(s)",
			out, err, len(disp.got(c.RequestID)))
	}
}
