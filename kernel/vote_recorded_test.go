package kernel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A failure after the vote's own commit (the store goes down, the commit
// that resumes or denies the approved call fails, the settle commit fails)
// used to come back from Respond as the bare store error: every channel
// then told the approver "your vote was not recorded" (Slack) or 503
// "unavailable, try again" (the API, the email link), though the vote was
// durable. Respond must say the vote is recorded, keep the cause
// matchable, and never say so when the vote's own commit failed.
func TestFailureAfterTheVoteSaysTheVoteIsRecorded(t *testing.T) {
	ctx := context.Background()
	// failFrom lets the next `after` updates commit (the first is the
	// vote's), then fails every one: the store goes down after the vote.
	failFrom := func(w *waWorld, after int64) {
		base := w.store.n.Load()
		w.store.failNth = func(n int64) bool { return n > base+after }
	}
	vote := func(t *testing.T, w *waWorld, id string) error {
		_, err := w.Kernel.Respond(ctx, id, w.Token(t, id, financeLead, approval.DecisionApproved, nil), "", "")
		return err
	}
	recorded := func(t *testing.T, w *waWorld, id string) {
		t.Helper()
		w.store.failNth = nil
		req, err := w.Kernel.Approval(id)
		if err != nil || len(req.Votes) != 1 || req.Status != approval.StatusApproved {
			t.Fatalf("the vote is not durable: %+v %v", req, err)
		}
	}
	t.Run("the allow decision's commit fails", func(t *testing.T) {
		w := newWAWorld(t, &scriptedTool{})
		out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
		failFrom(w, 1)
		err := vote(t, w, out.ApprovalRequestID)
		if !errors.Is(err, kernel.ErrVoteRecorded) || !strings.Contains(err.Error(), "is recorded") {
			t.Fatalf("the vote committed, yet Respond answered %v", err)
		}
		if !errors.Is(err, kernel.ErrOutcomeUnknown) {
			t.Fatalf("the cause must stay matchable: %v", err)
		}
		recorded(t, w, out.ApprovalRequestID)
	})
	t.Run("the deny on resume cannot commit", func(t *testing.T) {
		w := newWAWorld(t, &scriptedTool{})
		out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
		if err := w.Kernel.Revoke(ctx, w.Cap.ID); err != nil {
			t.Fatal(err)
		}
		failFrom(w, 1)
		err := vote(t, w, out.ApprovalRequestID)
		if !errors.Is(err, kernel.ErrVoteRecorded) || !errors.Is(err, kernel.ErrUnavailable) {
			t.Fatalf("the vote committed, yet Respond answered %v", err)
		}
		recorded(t, w, out.ApprovalRequestID)
	})
	t.Run("the settle commit fails after the tool ran", func(t *testing.T) {
		w := newWAWorld(t, &scriptedTool{})
		out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
		failFrom(w, 2) // the vote, then the allow decision, land
		err := vote(t, w, out.ApprovalRequestID)
		if !errors.Is(err, kernel.ErrVoteRecorded) || !errors.Is(err, kernel.ErrOutcomeUnknown) {
			t.Fatalf("the vote committed and the call ran, yet Respond answered %v", err)
		}
		recorded(t, w, out.ApprovalRequestID)
	})
	t.Run("the vote's own commit fails: never recorded", func(t *testing.T) {
		w := newWAWorld(t, &scriptedTool{})
		out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
		w.store.failNth = func(int64) bool { return true }
		err := vote(t, w, out.ApprovalRequestID)
		if err == nil || errors.Is(err, kernel.ErrVoteRecorded) || strings.Contains(err.Error(), "is recorded") {
			t.Fatalf("the vote's commit failed, yet Respond answered %v", err)
		}
		w.store.failNth = nil
		if req, err := w.Kernel.Approval(out.ApprovalRequestID); err != nil || len(req.Votes) != 0 {
			t.Fatalf("%+v %v", req, err)
		}
	})
}

// A vote whose own commit is reported failed but reached the store (an
// fsync error, a lost COMMIT acknowledgement) came back as a bare
// ErrUnavailable, which channels read as "not recorded". It may be
// recorded: Respond must say it cannot tell (ErrVoteUncertain, still 503
// ErrUnavailable for the API), never "is recorded", and presenting the
// same token again must answer that it was (a replay), never count it
// twice.
func TestLostVoteCommitSaysMayBeRecorded(t *testing.T) {
	ctx := context.Background()
	st := &lostCommitStore{}
	w, _, clk := lostCommitWorld(t, "", st)
	k := w.Kernel
	call := testkit.NewCall(t, agentK, w.CapRaw, "demo", "echo", `{"amount":450}`, "", clk.Now())
	out, err := k.Submit(ctx, call)
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	tok := testkit.SignToken(t, k, clk.Now(), out.ApprovalRequestID, financeLead, "approved", nil)
	st.armed.Store(true)
	_, err = k.Respond(ctx, out.ApprovalRequestID, tok, "", "")
	if !errors.Is(err, kernel.ErrVoteUncertain) || errors.Is(err, kernel.ErrVoteRecorded) || !errors.Is(err, kernel.ErrUnavailable) ||
		!strings.Contains(err.Error(), "may or may not be recorded") {
		t.Fatalf("the vote's commit was lost: Respond answered %v", err)
	}
	st.down.Store(false) // the store heals
	if req, err := k.Approval(out.ApprovalRequestID); err != nil || len(req.Votes) != 1 {
		t.Fatalf("setup: the lost commit did not land: %+v %v", req, err)
	}
	if _, err := k.Respond(ctx, out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("the same token again: %v, want a replay (the vote was recorded)", err)
	}
	if req, _ := k.Approval(out.ApprovalRequestID); len(req.Votes) != 1 {
		t.Fatalf("the vote was counted twice: %+v", req)
	}
}
