package slack_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A custodial click whose vote committed, followed by a failure (the store
// goes down before the approved call is run or denied), used to answer
// "Your vote was not recorded: …": the approver clicks again (refused:
// already voted) or asks someone else, while the audit trail holds the
// vote. The answer must say the vote is recorded.
func TestCustodialClickAfterTheVoteCommittedSaysRecorded(t *testing.T) {
	for _, revoked := range []bool{false, true} {
		name := map[bool]string{false: "the allow commit fails", true: "the deny on resume cannot commit"}[revoked]
		t.Run(name, func(t *testing.T) {
			st := testkit.NewDownAfterStore()
			w := worldOn(t, testPolicy, []string{"refunds", "echo"}, "req-slack-rec-", st.Wrap)
			out := w.refund(t)
			id := out.ApprovalRequestID
			w.posted(t, id)
			if revoked {
				if err := w.k.Revoke(context.Background(), w.tw.Cap.ID); err != nil {
					t.Fatal(err)
				}
			}
			st.DownAfter(1) // the vote's commit lands; nothing after it
			if code := w.click(lead, slack.ActionApprove, id); code != 200 {
				t.Fatalf("click: %d", code)
			}
			e := w.ephemeralTo(leadID)
			if len(e) != 1 || strings.Contains(e[0], "vote was not recorded") || !strings.Contains(e[0], "is recorded") ||
				!strings.Contains(e[0], "do not vote again") {
				t.Fatalf("the vote is durable, yet the approver was told: %v", e)
			}
			st.Up()
			if req := w.approval(t, id); len(req.Votes) != 1 || req.Status != approval.StatusApproved {
				t.Fatalf("%+v", req)
			}
		})
	}
}

// lostVoteStore: once armed, the next commit reaches the store but is
// answered an fsync error (a commit reported failed that is durable).
type lostVoteStore struct {
	kernel.Store
	armed atomic.Bool
}

func (s *lostVoteStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	if !s.armed.CompareAndSwap(true, false) {
		return s.Store.Update(ctx, fn)
	}
	if err := s.Store.Update(ctx, fn); err != nil {
		return err
	}
	return fmt.Errorf("%w: fsync: input/output error", kernel.ErrUnavailable)
}

// A custodial click whose vote's own commit was reported failed but
// reached the store used to answer "Your vote was not recorded": false.
// chio cannot know, so it must say so, and a second click must tell the
// approver the vote is already cast, never count it twice.
func TestCustodialClickWhoseVoteCommitWasLostSaysUnconfirmed(t *testing.T) {
	st := &lostVoteStore{}
	w := worldOn(t, testPolicy, []string{"refunds", "echo"}, "req-slack-lost-",
		func(s kernel.Store) kernel.Store { st.Store = s; return st })
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)
	st.armed.Store(true)
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	e := w.ephemeralTo(leadID)
	if len(e) != 1 || strings.Contains(e[0], "not recorded") || !strings.Contains(e[0], "could not confirm") {
		t.Fatalf("the vote's commit was lost (it is durable), yet the approver was told: %v", e)
	}
	if req := w.approval(t, id); len(req.Votes) != 1 {
		t.Fatalf("setup: the lost commit did not land: %+v", req)
	}
	w.clk.Advance(time.Second) // a new click, not a replay of the first request
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("second click: %d", code)
	}
	if e := w.ephemeralTo(leadID); len(e) != 2 || !strings.Contains(e[1], "already") {
		t.Fatalf("a second click on a recorded vote: %v", e)
	}
	if req := w.approval(t, id); len(req.Votes) != 1 {
		t.Fatalf("the vote was counted twice: %+v", req)
	}
}
