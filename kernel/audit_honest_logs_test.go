package kernel_test

// Honest logs produced by the real kernel on bbolt,
// exported by the real store, must verify OK offline (receipt.VerifyExport,
// what `chio receipt verify --file` runs).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// honestLogPolicy: a 2-of-3 rule on echo; %[4]d quorum, %[5]d deny_quorum,
// %[6]s the approvers block (names "Finance Lead", "CFO", "SRE"),
// %[7]s extra [grants.approval] lines.
const honestLogPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = %[4]d
deny_quorum = %[5]d
%[7]s
%[6]s
`

type honestLog struct {
	w     *testkit.World
	k     *kernel.Kernel
	clock *clock.Fake
	log   *receipt.Log
	disp  *fakeDispatcher
	kkey  keys.PrivateKey
}

func approversBlock(ks ...keys.PrivateKey) string {
	names := map[string]string{financeLead.Public().String(): "Finance Lead", cfo.Public().String(): "CFO", sre.Public().String(): "SRE"}
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\n", k.Public().String(), names[k.Public().String()])
	}
	return b.String()
}

func honestLogPolicyFor(t *testing.T, quorum, denyQuorum int, extra string, approvers ...keys.PrivateKey) *policy.Policy {
	t.Helper()
	text := fmt.Sprintf(honestLogPolicy, financeLead.Public(), cfo.Public(), sre.Public(), quorum, denyQuorum, approversBlock(approvers...), extra)
	p, err := policy.Parse([]byte(text), "honest-log.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newHonestLog(t *testing.T, p *policy.Policy) *honestLog {
	t.Helper()
	a := &honestLog{clock: clock.NewFake(time.Unix(1_800_000_000, 0)), disp: &fakeDispatcher{}, kkey: keys.FromSeed(bytes.Repeat([]byte{7}, 32))}
	a.log = receipt.NewLog(a.kkey, receipt.LogOptions{Interval: time.Hour, Now: a.clock.Now})
	a.w = testkit.NewWorld(t, testkit.Options{Policy: p, Clock: a.clock, Dispatcher: a.disp, KernelKey: testkit.Key(a.kkey),
		Agent: testkit.Key(agentK), Grants: []string{"deploys"}, CapabilityTTL: 24 * time.Hour, Log: a.log})
	a.k = a.w.Kernel
	return a
}

func (a *honestLog) park(t *testing.T, args string) *kernel.Outcome {
	t.Helper()
	out, err := a.k.Submit(context.Background(), testkit.NewCall(t, agentK, a.w.CapRaw, "demo", "echo", args, "", a.clock.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	return out
}

func (a *honestLog) vote(t *testing.T, id string, k keys.PrivateKey, decision string) *kernel.RespondResult {
	t.Helper()
	res, err := a.k.Respond(context.Background(), id, testkit.SignToken(t, a.k, a.clock.Now(), id, k, decision, nil), "", "")
	if err != nil {
		t.Fatalf("vote %s by %s: %v", decision, k.Public(), err)
	}
	return res
}

// verify exports the store (after a fresh checkpoint) and runs the
// offline verifier on it, as `chio receipt verify --file` does.
func (a *honestLog) verify(t *testing.T) (*receipt.VerifyReport, []byte) {
	t.Helper()
	a.k.WaitSettles()
	ctx := context.Background()
	if _, _, err := a.log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := a.w.Store.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	exp := bytes.Clone(buf.Bytes())
	rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: a.kkey.Public()})
	if err != nil {
		t.Fatal(err)
	}
	return rep, exp
}

func (a *honestLog) mustVerify(t *testing.T, what string) *receipt.VerifyReport {
	t.Helper()
	rep, exp := a.verify(t)
	if !rep.OK() {
		var ps []string
		for _, p := range rep.Problems {
			ps = append(ps, p.String())
		}
		t.Fatalf("%s: the honest export of a real kernel does not verify (%d problems):\n%s\n--- export ---\n%s", what, rep.ProblemCount, strings.Join(ps, "\n"), exp)
	}
	return rep
}

// Baselines that pass today (kept so the rig is shown to work).
func TestHonestLogsVerifyAcrossApprovalPaths(t *testing.T) {
	t.Run("2-of-3 with a dissenting denial", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
		out := a.park(t, `{"x":1}`)
		a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionDenied)
		a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
		if res := a.vote(t, out.ApprovalRequestID, sre, approval.DecisionApproved); res.Outcome != approval.StatusApproved {
			t.Fatalf("%+v", res)
		}
		rep := a.mustVerify(t, "2-of-3")
		if rep.Tokens != 3 {
			t.Fatalf("tokens %d", rep.Tokens)
		}
	})
	t.Run("deny_quorum 2", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
		out := a.park(t, `{"x":1}`)
		a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
		a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionDenied)
		if res := a.vote(t, out.ApprovalRequestID, sre, approval.DecisionDenied); res.Outcome != approval.StatusDenied {
			t.Fatalf("%+v", res)
		}
		a.mustVerify(t, "deny_quorum 2")
	})
	t.Run("auto_approve_advisory after one human approval", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 1, `timeout_action = "auto_approve_advisory"`, financeLead, cfo, sre))
		out := a.park(t, `{"x":1}`)
		a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
		a.clock.Advance(601 * time.Second)
		eventually(t, "advisory approval", func() bool { r, _ := a.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
		a.mustVerify(t, "advisory")
	})
	t.Run("escalation tiers, one vote per tier", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 1, `timeout_action = "escalate"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead", "CFO"]
timeout_seconds = 300
[[grants.approval.escalation.tiers]]
approvers = ["SRE", "CFO"]
timeout_seconds = 300`, financeLead, cfo, sre))
		out := a.park(t, `{"x":1}`)
		a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
		a.clock.Advance(301 * time.Second)
		eventually(t, "escalation", func() bool { r, _ := a.k.Approval(out.ApprovalRequestID); return r.Tier == 1 })
		if res := a.vote(t, out.ApprovalRequestID, sre, approval.DecisionApproved); res.Outcome != approval.StatusApproved {
			t.Fatalf("%+v", res)
		}
		a.mustVerify(t, "escalation")
	})
	t.Run("capability revoked during the wait, two votes", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
		out := a.park(t, `{"x":1}`)
		a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionDenied)
		a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
		if err := a.k.Revoke(context.Background(), a.w.Cap.ID); err != nil {
			t.Fatal(err)
		}
		a.vote(t, out.ApprovalRequestID, sre, approval.DecisionApproved)
		a.mustVerify(t, "revoked")
	})
	t.Run("cancelled and expired with votes", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
		c := a.park(t, `{"x":1}`)
		a.vote(t, c.ApprovalRequestID, financeLead, approval.DecisionApproved)
		a.vote(t, c.ApprovalRequestID, cfo, approval.DecisionDenied)
		if _, err := a.k.Cancel(context.Background(), c.ApprovalRequestID, "no", "admin"); err != nil {
			t.Fatal(err)
		}
		e := a.park(t, `{"x":2}`)
		a.vote(t, e.ApprovalRequestID, financeLead, approval.DecisionApproved)
		a.clock.Advance(601 * time.Second)
		eventually(t, "deadline", func() bool { r, _ := a.k.Approval(e.ApprovalRequestID); return r.Status != approval.StatusPending })
		a.mustVerify(t, "cancel/expire")
	})
}

// FINDING 1: a reload removes an approver who had already voted. The kernel
// keeps the vote on the request (it simply stops counting), signs that key
// into the final receipt's "approvers"/"dissenters", and exports the token
// — but the exported trusted_approvers is the reconciled set, without that
// key. `chio receipt verify` then fails an honest log ("approver … is not
// in trusted_approvers").
func TestLogVerifiesAfterAReloadRemovesAVoter(t *testing.T) {
	for _, first := range []string{approval.DecisionApproved, approval.DecisionDenied} {
		t.Run("removed approver had "+first, func(t *testing.T) {
			a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
			out := a.park(t, `{"x":1}`)
			a.vote(t, out.ApprovalRequestID, financeLead, first)
			// The operator removes the Finance Lead from the grant.
			if err := a.k.ApplyPolicy(context.Background(), honestLogPolicyFor(t, 2, 2, "", cfo, sre)); err != nil {
				t.Fatal(err)
			}
			a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
			res := a.vote(t, out.ApprovalRequestID, sre, approval.DecisionApproved)
			if res.Outcome != approval.StatusApproved || a.disp.count(out.RequestID) != 1 {
				t.Fatalf("%+v, dispatched %d", res, a.disp.count(out.RequestID))
			}
			a.mustVerify(t, "reload removed a voter")
		})
	}
}

// FINDING 2: a denial resolved the request as APPROVED and ran the call.
// Finance Lead approves, is removed by a reload (vote stops counting), CFO
// approves (1 of 2), the Finance Lead is re-added by a later reload (the
// reconcile does not re-count approvals), then the SRE DENIES (deny_quorum
// 2, so one denial does not end it). recordVote counts lead+CFO = 2 ≥ 2 and
// resolves "approved" with the SRE's DENIAL as the deciding vote: the call
// is dispatched on a denial; the signed allow receipt names the SRE (who
// refused) as its approver with approval_token_id = the denial token, and
// lists the two people who approved as "dissenters". Offline verify then
// fails the honest log.
func TestADenialNeverDecidesAnApproval(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre))
	ctx := context.Background()
	out := a.park(t, `{"x":1}`)
	a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved)
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 2, "", cfo, sre)); err != nil {
		t.Fatal(err)
	}
	a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
	if err := a.k.ApplyPolicy(ctx, honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre)); err != nil {
		t.Fatal(err)
	}
	// The reload that re-adds the Finance Lead makes the approvals meet the
	// quorum: it resolves the request then (reload_resolve.go), decided by
	// the CFO's approval, so the SRE's later denial is refused, not taken
	// as the deciding vote of an approval. The call runs in the background.
	if err := a.k.WaitRecovery(ctx); err != nil {
		t.Fatal(err)
	}
	a.k.WaitSettles()
	var problems []string
	rec, err := a.k.Call(out.RequestID)
	if err != nil || rec.Status != kernel.StatusAllowed || a.disp.count(out.RequestID) != 1 {
		problems = append(problems, fmt.Sprintf("after the reload met the quorum the call is %+v (%v), dispatched %d time(s)", rec, err, a.disp.count(out.RequestID)))
	} else if r := a.w.Receipt(t, rec.DecisionReceiptID); r.Metadata["approver"] != cfo.Public().String() {
		problems = append(problems, fmt.Sprintf("signed %s receipt: approver %v, approval_token_id %v, approvers %v, dissenters %v",
			r.Decision.Verdict, r.Metadata["approver_display_name"], r.Metadata["approval_token_id"], r.Metadata["approvers"], r.Metadata["dissenters"]))
	}
	deny := testkit.SignToken(t, a.k, a.clock.Now(), out.ApprovalRequestID, sre, approval.DecisionDenied, nil)
	if res, err := a.k.Respond(ctx, out.ApprovalRequestID, deny, "", ""); err == nil {
		problems = append(problems, fmt.Sprintf("the SRE's denial after the resolution answered %+v", res))
	}
	if rep, _ := a.verify(t); !rep.OK() {
		for _, p := range rep.Problems {
			problems = append(problems, "verify: "+p.String())
		}
	}
	if len(problems) > 0 {
		t.Fatal(strings.Join(problems, "\n"))
	}
}

func TestHonestLogsVerifyAcrossQuorumEndings(t *testing.T) {
	t.Run("amended approval", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 1, 1, "expose_arguments = true", financeLead, cfo))
		out := a.park(t, `{"x":1}`)
		tok := testkit.SignToken(t, a.k, a.clock.Now(), out.ApprovalRequestID, financeLead, approval.DecisionApproved, func(tk *approval.Token) {
			tk.AmendedArguments = json.RawMessage(`{"x":2}`)
		})
		if res, err := a.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusApproved {
			t.Fatalf("%+v %v", res, err)
		}
		a.mustVerify(t, "amended")
	})
	t.Run("standing batch approval", func(t *testing.T) {
		a := newHonestLog(t, honestLogPolicyFor(t, 1, 1, "", financeLead, cfo))
		calls := int64(2)
		bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
			Audience: a.k.PublicKey().String(), ServerPattern: "demo", ToolPattern: "echo", MaxCalls: &calls,
			NotBefore: a.clock.Now().Unix(), NotAfter: a.clock.Now().Add(time.Hour).Unix()}
		raw, _ := bt.Sign(financeLead)
		if _, err := a.k.CreateBatch(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			out, err := a.k.Submit(context.Background(), testkit.NewCall(t, agentK, a.w.CapRaw, "demo", "echo", fmt.Sprintf(`{"x":%d}`, i), "", a.clock.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if i == 2 {
				a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
			}
		}
		a.mustVerify(t, "batch")
	})
}

func TestHonestConfirmAndAskLogsVerify(t *testing.T) {
	text := fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "ask"
[grants.approval]
timeout_seconds = 300
quorum = 2
%s
[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
timeout_seconds = 300
quorum = 2
deny_quorum = 2
%s`, approversBlock(financeLead, cfo, sre), approversBlock(financeLead, cfo, sre))
	p, err := policy.Parse([]byte(text), "hitl.toml")
	if err != nil {
		t.Fatal(err)
	}
	a := newHonestLog(t, p)
	cp, _, err := a.k.IssueCapability(agentK.Public(), []string{"deploys", "confirm"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ask, err := a.k.Submit(ctx, testkit.NewCall(t, agentK, cp, "demo", "ask", `{"prompt":"which env?","questions":[{"id":"env","text":"Which env?","type":"single","options":["prod","staging"]}]}`, "", a.clock.Now()))
	if err != nil || ask.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", ask, err)
	}
	ans := func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"env":"prod"}`) }
	for _, k := range []keys.PrivateKey{financeLead, sre} {
		d := approval.DecisionApproved
		mut := ans
		if _, err := a.k.Respond(ctx, ask.ApprovalRequestID, testkit.SignToken(t, a.k, a.clock.Now(), ask.ApprovalRequestID, k, d, mut), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	conf, err := a.k.Submit(ctx, testkit.NewCall(t, agentK, cp, "demo", "confirm", `{"prompt":"Send it?"}`, "", a.clock.Now()))
	if err != nil || conf.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", conf, err)
	}
	a.vote(t, conf.ApprovalRequestID, cfo, approval.DecisionDenied)
	a.vote(t, conf.ApprovalRequestID, financeLead, approval.DecisionApproved)
	a.vote(t, conf.ApprovalRequestID, sre, approval.DecisionApproved)
	a.mustVerify(t, "ask/confirm")
}

// Recovery after a crash between the deciding vote's commit and the
// final receipt: recoverApproved builds the final receipt.
func TestHonestLogVerifiesAfterRecovery(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_800_000_000, 0))
	kkey := keys.FromSeed(bytes.Repeat([]byte{7}, 32))
	lg := receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour, Now: fake.Now})
	cs := &crashStore{}
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{Policy: honestLogPolicyFor(t, 2, 2, "", financeLead, cfo, sre), Clock: fake, Dispatcher: disp,
		KernelKey: testkit.Key(kkey), Agent: testkit.Key(agentK), Grants: []string{"deploys"}, Log: lg,
		WrapStore: func(s kernel.Store) kernel.Store { cs.Store = s; return cs }})
	a := &honestLog{w: w, k: w.Kernel, clock: fake, log: lg, disp: disp, kkey: kkey}
	out := a.park(t, `{"x":1}`)
	a.vote(t, out.ApprovalRequestID, financeLead, approval.DecisionDenied)
	a.vote(t, out.ApprovalRequestID, cfo, approval.DecisionApproved)
	cs.crashAt = cs.n.Load() + 2 // the third vote commits; the allow receipt's commit dies
	if _, err := a.k.Respond(context.Background(), out.ApprovalRequestID,
		testkit.SignToken(t, a.k, a.clock.Now(), out.ApprovalRequestID, sre, approval.DecisionApproved, nil), "", ""); err == nil {
		t.Fatal("no crash")
	}
	if r, _ := a.k.Approval(out.ApprovalRequestID); r.Status != approval.StatusApproved {
		t.Fatalf("vote not durable: %s", r.Status)
	}
	a.k.WaitSettles()
	a.k.Close()
	k, err := kernel.New(kernel.Config{Key: kkey, Policy: w.Policy, Store: w.Store, Dispatcher: disp, Clock: fake})
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
	rec, _ := k.Call(out.RequestID)
	if rec.Status != kernel.StatusAllowed || disp.count(out.RequestID) != 1 {
		t.Fatalf("after recovery: %+v, dispatched %d", rec, disp.count(out.RequestID))
	}
	a.mustVerify(t, "recovered")
}

// FINDING 3: timeout_action = auto_approve_advisory, and the call is denied
// when it resumes (capability revoked / expired during the wait, grant
// narrowed by a reload, a guard that now denies). resume's deny path signs
// the final receipt with the kernel's advisory token as the deciding
// approval_token_id but without auto_approved (only the allow path sets
// it). Offline verify then fails the honest log twice: "signed by the
// kernel key but the receipt is not flagged auto_approved" and "approver
// <kernel key> … is not in trusted_approvers".
func TestAdvisoryApprovalDeniedOnResumeVerifies(t *testing.T) {
	a := newHonestLog(t, honestLogPolicyFor(t, 1, 1, `timeout_action = "auto_approve_advisory"`, financeLead, cfo))
	out := a.park(t, `{"x":1}`)
	if err := a.k.Revoke(context.Background(), a.w.Cap.ID); err != nil {
		t.Fatal(err)
	}
	a.clock.Advance(601 * time.Second)
	eventually(t, "deadline", func() bool { r, _ := a.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
	// The request resolves (approved, advisory) a moment before the resumed
	// call's deny commits: wait for the call to leave dispatching too.
	eventually(t, "resume", func() bool {
		r, _ := a.k.Call(out.RequestID)
		return r != nil && r.Status != kernel.StatusPendingApproval && r.Status != kernel.StatusDispatching
	})
	a.k.WaitSettles()
	rec, _ := a.k.Call(out.RequestID)
	if rec.Status != kernel.StatusDenied || a.disp.count(out.RequestID) != 0 {
		t.Fatalf("revoked call: %+v", rec)
	}
	a.mustVerify(t, "advisory approval, denied on resume (capability revoked)")
}

var _ = json.RawMessage(nil)
