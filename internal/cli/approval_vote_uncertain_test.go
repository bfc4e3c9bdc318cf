package cli_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// answerLostStore: once armed, the next update commits but is answered
// failed, as a PostgreSQL COMMIT whose connection is cut.
type answerLostStore struct {
	kernel.Store
	armed atomic.Bool
}

func (s *answerLostStore) wrap(inner kernel.Store) kernel.Store { s.Store = inner; return s }

func (s *answerLostStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection reset while COMMIT was answered", kernel.ErrUnavailable)
	}
	return err
}

// A denial whose commit landed but whose answer was lost: `chio approval
// deny` must say the vote may or may not be recorded (an error, never
// "denied"), and running it again, as that message and docs/approver.md
// say to, must tell the approver their vote is recorded. It answered
// "ar-… is denied, not pending", the same as when someone else's vote
// decided and theirs was never recorded.
func TestDenyAgainAfterItsAnswerWasLostSaysTheVoteIsRecorded(t *testing.T) {
	st := &answerLostStore{}
	w := newApprovalWorld(t, st.wrap)
	out := w.refund(t, 450)
	st.armed.Store(true)
	so, se, code := w.run(adminEnv(), "approval", "deny", out.ApprovalRequestID, "--key", w.key("lead"), "--reason", "not this one")
	if st.armed.Load() {
		t.Fatal("setup: the vote never committed")
	}
	if code != cli.ExitError || !strings.Contains(se, "may or may not be recorded") || strings.Contains(so, "denied "+out.ApprovalRequestID) {
		t.Fatalf("a vote whose answer was lost: exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	t.Logf("%s", strings.TrimSpace(se))
	so, se, code = w.run(adminEnv(), "approval", "deny", out.ApprovalRequestID, "--key", w.key("lead"), "--reason", "not this one")
	if code != cli.ExitError || !strings.Contains(se, "your vote on it is recorded") {
		t.Fatalf("voting again after the lost answer: exit %d; want exit %d saying the vote is recorded\nstdout: %s\nstderr: %s",
			code, cli.ExitError, so, se)
	}
	t.Logf("%s", strings.TrimSpace(se))
	// Another approver, whose vote is not on the request, is told only
	// that it is decided.
	if _, se, _ := w.run(adminEnv(), "approval", "deny", out.ApprovalRequestID, "--key", w.key("cfo"), "--reason", "no"); strings.Contains(se, "recorded") {
		t.Fatalf("an approver who never voted is told %s", se)
	}
}
