package cli_test

import (
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
)

// TestWatchPipedAnswersAnswerOnlyTheRequestTheyFollow: answers piped to
// the watch are read in order, one set per request shown, so a script
// writes them for the requests it expects, in turn. The lead's script
// approves a delete (quorum 2) and denies the refund after it. While the
// delete's answer is read, the CFO approves it: the delete changed, and
// nothing is signed for it. Shown again and asked again, it took the next
// lines — the denial written for the refund — and the lead denied the
// delete they had meant to approve. On piped input a request is asked
// once: one that changed (or whose vote chiod refused) is left for
// `chio approval approve|deny`, and the next lines answer the next
// request.
func TestWatchPipedAnswersAnswerOnlyTheRequestTheyFollow(t *testing.T) {
	w := newApprovalWorld(t)
	del := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "") // quorum 2
	refund := w.refund(t, 300)
	pw := startPipedWatchAtNote(t, w.url, w.key("lead")) // the delete: approve
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", del.ApprovalRequestID, "--key", w.key("cfo")); code != cli.ExitPending {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	pw.finish(t, "\n"+ // the delete's note
		"d\nnot this refund\n") // the refund: deny
	so, se := pw.so, &pw.se
	d, err := w.k.Approval(del.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	r, err := w.k.Approval(refund.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	leadKey, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	lead := leadKey.Public().String()
	if d.HasVoted(lead) || !r.HasVoted(lead) {
		t.Fatalf("the lines written for the refund answered the delete: the delete is %s with %d votes (the lead's: %v), the refund %s (the lead's vote: %v)\n%s\n%s",
			d.Status, len(d.Votes), d.HasVoted(lead), r.Status, r.HasVoted(lead), so.String(), se.String())
	}
}
