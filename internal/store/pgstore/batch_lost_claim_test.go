package pgstore_test

import (
	"context"
	"errors"
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

// A standing approval's claim whose COMMIT answer is lost (durable) or
// whose commit never reaches the database, on replica 0; the agent retries
// the same request id on replica 1, and a second refund follows there.
// The one-call batch is spent once: the durable claim's retry is answered
// from its record and claims nothing, the lost one's retry claims the
// call; the refund runs once; the second refund waits for a person; the
// batch's counter equals its allow receipts.
func TestBatchClaimWithALostCommitRetriedOnAnotherReplica(t *testing.T) {
	for _, durable := range []bool{true, false} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			w, lost := payReplicasLosing(t)
			one := int64(1)
			w.createBatch(t, func(bt *approval.BatchToken) {
				bt.MaxCalls = &one
				bt.MaxTotalAmount = &approval.Amount{Units: 1000, Currency: "USD"}
			})
			call := testkit.NewCall(t, w.agent, w.capRaw, "demo", "issue_refund", `{"amount":500,"currency":"USD"}`, "", w.rs[0].clock.Now())
			if durable {
				lost.lose.Store(true)
			} else {
				lost.fail.Store(true)
			}
			if _, err := w.rs[0].k.Submit(context.Background(), call); !errors.Is(err, kernel.ErrOutcomeUnknown) {
				t.Fatalf("a claim whose commit failed: want ErrOutcomeUnknown, got %v", err)
			}
			retry := *call
			testkit.Sign(t, &retry, w.agent, w.rs[1].clock.Now())
			out, err := w.rs[1].k.Submit(context.Background(), &retry)
			if err != nil || (out.Status != kernel.StatusDispatching && out.Status != kernel.StatusAllowed) {
				t.Fatalf("the retry on another replica: %+v %v", out, err)
			}
			second, err := w.pay(t, 1, 100)
			if err != nil || second.Status != kernel.StatusPendingApproval {
				t.Fatalf("a second refund under a spent one-call batch: %+v %v", second, err)
			}
			eventually(t, "the refund settled", func() bool {
				rec, err := w.rs[1].k.Call(call.RequestID)
				return err == nil && rec.Status == kernel.StatusAllowed && rec.Execution != ""
			})
			w.disp.mu.Lock()
			ran := w.disp.calls[call.RequestID]
			w.disp.mu.Unlock()
			receipts, usage := w.batchAllows(t)
			if ran != 1 || receipts != 1 || usage.Calls != 1 || usage.TotalAmount != 500 {
				t.Fatalf("refund ran %d times; %d allow receipts cite the batch; its counters %+v; want 1, 1, {1 500}", ran, receipts, usage)
			}
		})
	}
}

// payReplicasLosing is payReplicas(2) whose replica 0 commits through a
// lostAnswerStore.
func payReplicasLosing(t *testing.T) (*payWorld, *lostAnswerStore) {
	t.Helper()
	w := &payWorld{disp: &countingDispatcher{calls: map[string]int{}}, dsn: pgtest.Database(t),
		agent: keys.FromSeed([]byte("agent-agent-agent-agent-agent-32")),
		lead:  keys.FromSeed([]byte("approver-a-approver-a-approver-a"))}
	p, err := policy.Parse([]byte(fmt.Sprintf(payPolicy, w.lead.Public())), "pay.toml")
	if err != nil {
		t.Fatal(err)
	}
	lost := &lostAnswerStore{Store: openPG(t, w.dsn)}
	for i := 0; i < 2; i++ {
		pg := lost.Store
		var st kernel.Store = lost
		if i > 0 {
			pg = openPG(t, w.dsn)
			st = pg
		}
		clk := clock.NewFake(time.Unix(1_800_000_000, 0))
		w.rs = append(w.rs, replica{k: startKernel(t, p, st, pg, w.disp, clk), store: pg, clock: clk})
	}
	if w.capRaw, _, err = w.rs[0].k.IssueCapability(w.agent.Public(), []string{"pay"}, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	return w, lost
}

// A standing approval's create and a cancel whose COMMIT answers are lost
// (both durable) are answered ErrOutcomeUnknown, never "unavailable"
// (nothing written): the batch is stored and live, the request cancelled.
// Sent again, on another replica, each is refused as already done.
func TestLostCommitOfABatchCreateOrACancelIsNotUnavailable(t *testing.T) {
	w, lost := payReplicasLosing(t)
	k0, k1 := w.rs[0].k, w.rs[1].k
	now := w.rs[0].clock.Now()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: "ba-lost", Approver: w.lead.Public().String(),
		Audience: k0.PublicKey().String(), ServerPattern: "demo", ToolPattern: "issue_refund",
		NotBefore: now.Unix(), NotAfter: now.Add(time.Hour).Unix(), MaxTotalAmount: &approval.Amount{Units: 100, Currency: "USD"}}
	raw, err := bt.Sign(w.lead)
	if err != nil {
		t.Fatal(err)
	}
	lost.lose.Store(true)
	if _, err := k0.CreateBatch(context.Background(), raw); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a create whose COMMIT answer was lost: want ErrOutcomeUnknown, got %v", err)
	}
	if _, err := k1.CreateBatch(context.Background(), raw); !errors.Is(err, kernel.ErrConflict) {
		t.Fatalf("the same batch created again: want ErrConflict (it is stored), got %v", err)
	}
	// A refund over the batch's money is parked, then cancelled.
	out, err := w.pay(t, 0, 500)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	lost.lose.Store(true)
	if _, err := k0.Cancel(context.Background(), out.ApprovalRequestID, "withdrawn", kernel.CancelledByAdmin); !errors.Is(err, kernel.ErrOutcomeUnknown) {
		t.Fatalf("a cancel whose COMMIT answer was lost: want ErrOutcomeUnknown, got %v", err)
	}
	if _, err := k1.Cancel(context.Background(), out.ApprovalRequestID, "withdrawn", kernel.CancelledByAdmin); !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("the same cancel again: want ErrNotPending (it is recorded), got %v", err)
	}
	if rec, err := k1.Call(out.RequestID); err != nil || rec.Status != kernel.StatusCancelled {
		t.Fatalf("after the cancel: %+v %v", rec, err)
	}
}
