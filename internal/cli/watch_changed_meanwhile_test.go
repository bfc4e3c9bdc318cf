package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
)

// TestWatchShowsARequestThatChangedWhileItsPromptWaitedBeforeSigning: the
// lead is shown a delete that needs two approvals, "quorum: 0/2
// approvals", and answers approve. While the prompt waits for the note,
// the CFO approves. The watch read the request again before signing, saw
// it still pending and signed: the lead's vote, cast as the first of two,
// completed the quorum and ran the delete. What the approver answered
// must be what is current when the token is signed: a request whose view
// changed meanwhile (votes, tier, quorum, deadline) is shown again, as it
// now is, and nothing is signed for the answer to the old view. (Its
// answers piped, it is not asked again: watch_piped_order_test.go; on a
// terminal it is: watch_again_linux_test.go.)
func TestWatchShowsARequestThatChangedWhileItsPromptWaitedBeforeSigning(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "") // quorum 2
	pw := startPipedWatchAtNote(t, w.url, w.key("lead"))
	// While the lead's prompt waits, the CFO approves: one more approval
	// decides the request now.
	// (exit 3: the request is still pending, 1/2)
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo")); code != cli.ExitPending {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	pw.finish(t, "\n") // the note: the lead's answer is complete, and input ends
	so, se := pw.so, &pw.se
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusPending || len(req.Votes) != 1 {
		t.Fatalf("the lead answered a request shown as 0/2 approvals; the watch signed it at 1/2: it is %s with %d votes\n%s\n%s",
			req.Status, len(req.Votes), so.String(), se.String())
	}
	if got := so.String(); strings.Count(got, "── "+out.ApprovalRequestID) != 2 || !strings.Contains(got, "quorum:   1/2 approvals") ||
		!strings.Contains(got, "not asked again") {
		t.Fatalf("the request as it now is was not shown again:\n%s", got)
	}
}
