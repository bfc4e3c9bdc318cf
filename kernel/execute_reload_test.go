package kernel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A new call is allowed only under the policy in force when its allow
// decision commits. decide reads the policy, runs the guards with it and
// commits later; a reload in between that removed the call's grant was
// ignored and the call ran under a grant no longer in force.
func TestNewCallHonoursAReloadBeforeItsAllowCommit(t *testing.T) {
	firstN := func(t *testing.T, grantID string) *policy.Policy {
		text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "deny")
		text = strings.Replace(text, "require_approval_always = true", "require_approval_first_n = 1", 1)
		text = strings.Replace(text, `id = "refunds"`, `id = "`+grantID+`"`, 1)
		p, err := policy.Parse([]byte(text), "first-n.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: firstN(t, "refunds"), Dispatcher: disp, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	// The agent's first call was approved: later ones need nobody.
	if err := w.Store.Update(ctx, func(tx kernel.Tx) error {
		return tx.SetCounter(kernel.FirstNKey("refunds", w.Agent.Public().String()), 1)
	}); err != nil {
		t.Fatal(err)
	}
	// Submit reads the call's record (View 1); decide reads the policy,
	// then the first-N count (View 2), then commits the allow decision.
	// The reload, which removes grant "refunds", lands at View 2.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, firstN(t, "refunds-v2")); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(ctx, c)
	if views.Load() < 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || out.Status != kernel.StatusDenied || len(disp.got(c.RequestID)) != 0 {
		t.Fatalf("after a reload removed its grant, the call answered %+v (err %v); the tool ran %d time(s)",
			out, err, len(disp.got(c.RequestID)))
	}
}

// A call judged again after a reload (errPolicyReloaded) is still ONE
// call: decide's retry counted it a second time against
// max_calls_per_minute, so an agent's only call of the minute was denied
// by the rate limit because an unrelated reload landed while it was
// decided.
func TestNewCallJudgedAgainAfterAReloadCountsOnceAgainstTheRateLimit(t *testing.T) {
	limited := func(t *testing.T) *policy.Policy {
		text := fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "deny")
		text = strings.Replace(text, "require_approval_always = true", "require_approval_first_n = 1\nmax_calls_per_minute = 1", 1)
		p, err := policy.Parse([]byte(text), "rate.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gs := &gatedStore{}
	disp := &argsDispatcher{}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{Policy: limited(t), Dispatcher: disp, Clock: fake,
		Server: "pay", Grants: []string{"refunds"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	ctx := context.Background()
	if err := w.Store.Update(ctx, func(tx kernel.Tx) error {
		return tx.SetCounter(kernel.FirstNKey("refunds", w.Agent.Public().String()), 1)
	}); err != nil {
		t.Fatal(err)
	}
	// The same policy reloaded (a SIGHUP with the file unchanged) lands at
	// View 2, decide's first-N read: the call is judged again.
	var views atomic.Int64
	var hook func()
	hook = func() {
		if views.Add(1) == 2 {
			if err := w.Kernel.ApplyPolicy(ctx, limited(t)); err != nil {
				t.Error(err)
			}
			return
		}
		gs.beforeView.Store(&hook)
	}
	gs.beforeView.Store(&hook)
	c := w.Call(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
	out, err := w.Kernel.Submit(ctx, c)
	if views.Load() < 2 {
		t.Fatalf("the reload never landed (%d views)", views.Load())
	}
	if err != nil || out.Status != kernel.StatusAllowed || len(disp.got(c.RequestID)) != 1 {
		t.Fatalf("the agent's only call of the minute, judged again after a reload, answered %+v (err %v); the tool ran %d time(s)",
			out, err, len(disp.got(c.RequestID)))
	}
}
