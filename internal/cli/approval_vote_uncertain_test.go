package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
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

// A vote whose own commit lands but is reported failed (an fsync error, a
// COMMIT whose answer was lost) may or may not be recorded. chiod answered
// it 503 "unavailable" and `chio approval approve` printed "chio:
// unavailable (503): …", the word the SDKs and scripts read as "nothing
// happened". It must say the vote may or may not be recorded, that
// running the same command again settles it, and not to ask another
// approver; --output json carries chiod's vote_uncertain envelope.
func TestApproveWhoseVoteCommitAnswerWasLostSaysUncertain(t *testing.T) {
	st := &testkit.LostAnswerStore{}
	w := newApprovalWorld(t, st.Wrap)

	out := w.refund(t, 450)
	st.LoseNextAnswer()
	so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
	st.Up()
	all := so + se
	if code != cli.ExitError || strings.Contains(all, "chio: unavailable") ||
		!strings.Contains(so, "your vote on "+out.ApprovalRequestID+" may or may not be recorded") ||
		!strings.Contains(so, "chio approval approve "+out.ApprovalRequestID) || !strings.Contains(so, "do not ask another approver") {
		t.Fatalf("the vote may be recorded: approve answered exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	// Running it again settles it: the vote is recorded, and is not
	// counted twice.
	if so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead")); code == cli.ExitOK {
		t.Fatalf("voting again was counted: %d %s %s", code, so, se)
	}

	out = w.refund(t, 450)
	st.LoseNextAnswer()
	so, se, code = w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--output", "json")
	st.Up()
	var env struct{ Error, Message string }
	if code != cli.ExitError || json.Unmarshal([]byte(so), &env) != nil || env.Error != "vote_uncertain" ||
		!strings.Contains(env.Message, "may or may not be recorded") {
		t.Fatalf("json: exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
}

// `chio approval watch` printed the same answer as "error: ar-…: chio:
// vote_uncertain (503): …", an error line that does not say how to settle
// it; it prints the approve/deny line instead, and chiod's message.
func TestWatchWhoseVoteCommitAnswerWasLostSaysUncertain(t *testing.T) {
	st := &testkit.LostAnswerStore{}
	w := newApprovalWorld(t, st.Wrap)
	out := w.refund(t, 450)
	st.LoseNextAnswer()
	so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n\n"), "--key", w.key("lead"))
	st.Up()
	if strings.Contains(so, "error: "+out.ApprovalRequestID) ||
		!strings.Contains(so, "your vote on "+out.ApprovalRequestID+" may or may not be recorded") ||
		!strings.Contains(so, "chio approval approve "+out.ApprovalRequestID) {
		t.Fatalf("the vote may be recorded: watch printed\nstdout: %s\nstderr: %s", so, se)
	}
}
