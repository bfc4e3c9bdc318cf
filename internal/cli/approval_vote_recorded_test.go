package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// chiod answers 500 vote_recorded when the approver's vote committed and a
// step after it failed (kernel/vote_recorded.go). `chio approval approve`
// printed it as a plain error and exited 1, like a refused vote: an
// approver told so votes again (refused as a replay) or asks someone else.
// It must say the vote is recorded and exit ExitVoteRecorded (7).
func TestApproveAfterTheVoteCommittedSaysRecorded(t *testing.T) {
	st := testkit.NewDownAfterStore()
	w := newApprovalWorld(t, st.Wrap)

	out := w.refund(t, 450)
	st.DownAfter(1) // the vote's commit lands; nothing after it
	so, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
	st.Up()
	if code != cli.ExitVoteRecorded || code == cli.ExitError ||
		!strings.Contains(so, "your vote on "+out.ApprovalRequestID+" is recorded") || !strings.Contains(so, "do not vote again") {
		t.Fatalf("the vote is durable, yet approve answered exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
	// It is: another approver's vote is not needed, and the same key again
	// is refused (exit 1, as before).
	if _, se, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead")); code != cli.ExitError {
		t.Fatalf("voting again: %d %s", code, se)
	}

	// --output json prints chiod's envelope.
	out = w.refund(t, 450)
	st.DownAfter(1)
	so, se, code = w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"), "--output", "json")
	st.Up()
	var env struct{ Error, Message string }
	if code != cli.ExitVoteRecorded || json.Unmarshal([]byte(so), &env) != nil || env.Error != "vote_recorded" || !strings.Contains(env.Message, "is recorded") {
		t.Fatalf("json: exit %d\nstdout: %s\nstderr: %s", code, so, se)
	}
}
