package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// quorumTwoPolicy: echo needs two approvals; %[1]s names the approver
// lines.
const quorumTwoPolicy = `
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
quorum = 2
%[1]s`

// On PostgreSQL every replica reloads on its own, and each reconciles the
// shared pending requests with its policy: a reload that makes the votes
// recorded meet the quorum resolves the request once, on whichever replica
// commits first, and the call runs once.
func TestReloadResolvesOnceAcrossReplicas(t *testing.T) {
	a, b, c := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b")),
		keys.FromSeed([]byte("approver-c-approver-c-approver-c"))
	parse := func(approvers ...keys.PrivateKey) *policy.Policy {
		lines := ""
		for i, k := range approvers {
			lines += fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"%c\"\n", k.Public(), 'A'+i)
		}
		p, err := policy.Parse([]byte(fmt.Sprintf(quorumTwoPolicy, lines)), "q.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	disp := &countingDispatcher{calls: map[string]int{}}
	dsn := pgtest.Database(t)
	var ks []*kernel.Kernel
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	for range 2 {
		st := openPG(t, dsn)
		ks = append(ks, startKernel(t, parse(a, b), st, st, disp, clk))
	}
	ctx := context.Background()
	reload := func(p func() *policy.Policy) {
		for _, k := range ks {
			if err := k.ApplyPolicy(ctx, p()); err != nil {
				t.Fatal(err)
			}
		}
	}
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := ks[0].IssueCapability(agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ks[0].Submit(ctx, testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"deploy":"prod"}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	vote := func(k *kernel.Kernel, key keys.PrivateKey) {
		t.Helper()
		tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, key, approval.DecisionApproved, nil)
		if res, err := k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	vote(ks[0], a)
	reload(func() *policy.Policy { return parse(c, b) }) // A's key out: its vote stops counting
	vote(ks[1], b)                                       // 1 of 2
	reload(func() *policy.Policy { return parse(a, b) }) // A trusted again: 2 of 2
	// The approved call is delivered in the background.
	for _, k := range ks {
		if err := k.WaitRecovery(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range ks {
		rec, err := k.Call(out.RequestID)
		if err != nil || rec.Status != kernel.StatusAllowed {
			t.Fatalf("replica %d sees the call %+v (%v), want allowed by the reload", i, rec, err)
		}
	}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[out.RequestID]; n != 1 {
		t.Fatalf("the call ran %d times, want once", n)
	}
}

// A replica restarting with a file that makes the recorded approvals meet
// the quorum approves the request at start-up and finishes the call in
// the background: on PostgreSQL its own calls are not among the orphans
// it claims, so the approved call is listed for its recovery.
func TestStartUpApprovalFinishesOnPostgres(t *testing.T) {
	a, b, c := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b")),
		keys.FromSeed([]byte("approver-c-approver-c-approver-c"))
	parse := func(approvers ...keys.PrivateKey) *policy.Policy {
		lines := ""
		for i, k := range approvers {
			lines += fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"%c\"\n", k.Public(), 'A'+i)
		}
		p, err := policy.Parse([]byte(fmt.Sprintf(quorumTwoPolicy, lines)), "q.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	disp := &countingDispatcher{calls: map[string]int{}}
	dsn := pgtest.Database(t)
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	st := openPG(t, dsn)
	k := startKernel(t, parse(a, b), st, st, disp, clk)
	ctx := context.Background()
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	capRaw, _, err := k.IssueCapability(agent.Public(), []string{"deploys"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Submit(ctx, testkit.NewCall(t, agent, capRaw, "demo", "echo", `{"deploy":"prod"}`, "", clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	vote := func(key keys.PrivateKey) {
		t.Helper()
		tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, key, approval.DecisionApproved, nil)
		if res, err := k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil || res.Outcome != approval.StatusPending {
			t.Fatalf("vote: %+v %v", res, err)
		}
	}
	vote(a)
	if err := k.ApplyPolicy(ctx, parse(c, b)); err != nil {
		t.Fatal(err)
	}
	vote(b)
	k.Close()
	restarted := startKernel(t, parse(a, b), st, st, disp, clk) // the same replica, A trusted again
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := restarted.WaitRecovery(wctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the approved call to finish", func() bool {
		rec, err := restarted.Call(out.RequestID)
		return err == nil && rec.Status == kernel.StatusAllowed
	})
	disp.mu.Lock()
	defer disp.mu.Unlock()
	if n := disp.calls[out.RequestID]; n != 1 {
		t.Fatalf("the call ran %d times, want once", n)
	}
}
