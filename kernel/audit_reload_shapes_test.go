package kernel_test

// Honest logs of the receipt shapes reloads and restarts write (uncounted
// votes, quorums out of reach, answers that differ, approvals a restart's
// policy no longer counts) must verify offline, as audit_honest_logs_test.go
// does for the others: the real kernel on bbolt, exported, verified.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// The kernel denies, at a reload, a call whose quorum the reload put out
// of reach, after one approval (guard approval-policy, no deciding token),
// and denies at once one parked after it.
func TestHonestLogVerifiesAQuorumOutOfReach(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
	ctx := context.Background()
	out := a.park(t, `{"x":1}`)
	a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
	// The CFO and the SRE are replaced by the calling agent's own key: one
	// approver may decide (the kernel never counts the agent's vote).
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 2, approverEntry(agentK.Public().String(), "Agent"), financeLead)); err != nil {
		t.Fatal(err)
	}
	if r, _ := a.k.Approval(out.ApprovalRequestID); r.Status != approval.StatusDenied {
		t.Fatalf("after the reload the request is %s", r.Status)
	}
	now, err := a.k.Submit(ctx, testkit.NewCall(t, agentK, a.w.CapRaw, "demo", "echo", `{"x":2}`, "", a.clock.Now()))
	if err != nil || now.Status != kernel.StatusDenied {
		t.Fatalf("a call parked under quorum 2 of one approver: %+v %v", now, err)
	}
	a.mustVerify(t, "quorum out of reach")
}

// A question whose counted answers disagreed (a removed approver trusted
// again) is answered by two agreeing approvals: the other answer is named
// uncounted in the allow.
func TestHonestLogVerifiesAnUncountedAnswer(t *testing.T) {
	text := func(keys ...any) *policy.Policy {
		// The rig's capability holds grant "deploys".
		text := strings.Replace(fmt.Sprintf(askQuorumPolicy, askApprovers(keys...)), `id = "ask"`, `id = "deploys"`, 1)
		p, err := policy.Parse([]byte(text), "ask.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := text(financeLead.Public().String(), "Finance Lead", cfo.Public().String(), "CFO", sre.Public().String(), "SRE")
	a := newHonestLog(t, all)
	ctx := context.Background()
	out, err := a.k.Submit(ctx, testkit.NewCall(t, agentK, a.w.CapRaw, "demo", "ask", `{"questions":[{"id":"region","text":"Which region?","type":"single","options":["eu","us"]}]}`, "", a.clock.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	answer := func(by keys.PrivateKey, region string) *kernel.RespondResult {
		res, err := a.k.Respond(ctx, id, testkit.SignToken(t, a.k, a.clock.Now(), id, by, approval.DecisionApproved, answering(region)), "", "")
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	answer(financeLead, "us")
	if err := a.k.ApplyPolicy(ctx, text(cfo.Public().String(), "CFO", sre.Public().String(), "SRE")); err != nil {
		t.Fatal(err)
	}
	answer(cfo, "eu")
	if err := a.k.ApplyPolicy(ctx, all); err != nil {
		t.Fatal(err)
	}
	a.k.WaitRecovery(ctx)
	res := answer(sre, "eu")
	if res.Outcome != approval.StatusApproved {
		t.Fatalf("%+v", res)
	}
	if r := a.w.Receipt(t, res.ReceiptID); !slices.Equal(keysOf(t, r.Metadata["uncounted"]), []string{financeLead.Public().String()}) {
		t.Fatalf("uncounted %v", r.Metadata["uncounted"])
	}
	a.mustVerify(t, "an answer uncounted")
}

// chiod dies between the vote that approves a call and its allow, and
// restarts with a policy that removed the deciding approver (its vote is
// uncounted) while the others still meet the quorum: an allow whose own
// approver is uncounted. With another policy the votes no longer meet the
// quorum: a deny (approval-policy) with the approving vote's fields.
func TestHonestLogVerifiesARestartThatRecountsAnApproval(t *testing.T) {
	cto := keys.FromSeed(bytes.Repeat([]byte{42}, 32))
	for _, c := range []struct {
		name      string
		restart   *policy.Policy
		status    string
		uncounted []string
	}{
		{"the deciding approver removed", honestLogPolicyFor(t, 2, 2, "", cfo, sre), kernel.StatusAllowed, []string{financeLead.Public().String()}},
		{"the quorum raised", honestLogPolicyFor(t, 3, 2, approverEntry(cto.Public().String(), "CTO"), financeLead, sre), kernel.StatusDenied, []string{cfo.Public().String()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, cs := newCrashingHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
			ctx := context.Background()
			out := a.park(t, `{"x":1}`)
			a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
			if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 2, "", financeLead, sre)); err != nil {
				t.Fatal(err)
			}
			a.vote(t, out.ApprovalRequestID, sre, approval.DecisionApproved)
			cs.crashAt = cs.n.Load() + 2 // the Finance Lead's vote commits; the allow's commit dies
			if _, err := a.k.Respond(ctx, out.ApprovalRequestID,
				testkit.SignToken(t, a.k, a.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil), "", ""); err == nil {
				t.Fatal("no crash")
			}
			a.restart(t, c.restart)
			rec, _ := a.k.Call(out.RequestID)
			if rec.Status != c.status {
				t.Fatalf("after the restart: %+v", rec)
			}
			id := rec.DecisionReceiptID // an allow's
			if id == "" {
				id = rec.ReceiptID // a deny's
			}
			r := a.w.Receipt(t, id)
			if r.Metadata["approver"] != financeLead.Public().String() || !slices.Equal(keysOf(t, r.Metadata["uncounted"]), c.uncounted) {
				t.Fatalf("%s receipt: approver %v, uncounted %v", r.Decision.Verdict, r.Metadata["approver"], r.Metadata["uncounted"])
			}
			a.mustVerify(t, c.name)
		})
	}
}

// approverEntry is one more approver of honestLogPolicy's grant.
func approverEntry(key, name string) string {
	return fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\n", key, name)
}

// newCrashingHonestLog is newHonestLog over a crashStore.
func newCrashingHonestLog(t *testing.T, p *policy.Policy) (*honestLog, *crashStore) {
	t.Helper()
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	kkey := keys.FromSeed(bytes.Repeat([]byte{7}, 32))
	lg := receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour, Now: fake.Now})
	cs := &crashStore{}
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Clock: fake, Dispatcher: disp,
		KernelKey: testkit.Key(kkey), Agent: testkit.Key(agentK), Grants: []string{"deploys"}, Log: lg,
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	return &honestLog{w: w, k: w.Kernel, clock: fake, log: lg, disp: disp, kkey: kkey}, cs
}

// restart starts a new kernel on a's store under policy p and waits for
// its recovery, as chiod does after a crash.
func (a *honestLog) restart(t *testing.T, p *policy.Policy) {
	t.Helper()
	a.k.WaitSettles()
	a.k.Close()
	k, err := kernel.New(kernel.Config{Key: a.kkey, Policy: p, Store: a.w.Store, Dispatcher: a.disp, Clock: a.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	a.k = k
}
