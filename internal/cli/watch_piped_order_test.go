package cli_test

import (
	"bytes"
	"io"
	"testing"
	"time"

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
	stdin, typing := io.Pipe()
	so := &promptWatch{want: "note (optional): ", seen: make(chan struct{})}
	var se bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: stdin, Stdout: so, Stderr: &se, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": w.url, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	typing.Write([]byte("a\n")) // the delete: approve
	select {
	case <-so.seen:
	case <-time.After(30 * time.Second):
		t.Fatalf("no note prompt:\n%s", so.String())
	}
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", del.ApprovalRequestID, "--key", w.key("cfo")); code != cli.ExitPending {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	typing.Write([]byte("\n"))                   // the delete's note
	typing.Write([]byte("d\nnot this refund\n")) // the refund: deny
	typing.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("watch did not end:\n%s", so.String())
	}
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
