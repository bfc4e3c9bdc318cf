package cli_test

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
)

// termWatch runs `chio approval watch` on a pseudo-terminal: the approver
// reads each prompt before typing, and a request shown again (it changed
// while answered, or chiod refused its vote) is asked again there.
type termWatch struct {
	t      *testing.T
	master *os.File
	tty    *os.File
	echo   *promptWatch // what the terminal echoes of what is typed
	so     *promptWatch
	done   chan int
}

func startTermWatch(t *testing.T, w *approvalWorld, args ...string) *termWatch {
	t.Helper()
	master, tty := openPTY(t)
	tw := &termWatch{t: t, master: master, tty: tty, echo: &promptWatch{}, so: &promptWatch{}, done: make(chan int, 1)}
	go io.Copy(tw.echo, master)
	go func() {
		tw.done <- cli.Main(append([]string{"approval", "watch"}, args...),
			&cli.Env{Stdin: tty, Stdout: tw.so, Stderr: io.Discard, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": w.url, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	return tw
}

// shown waits until the watch has printed s n times.
func (tw *termWatch) shown(s string, n int) {
	tw.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(tw.so.String(), s) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tw.t.Fatalf("%q never shown %d times:\n%s", s, n, tw.so.String())
		}
	}
}

// typeLine types line and Enter, and waits until the watch has read it.
func (tw *termWatch) typeLine(line string) {
	tw.t.Helper()
	echoed := len(tw.echo.String())
	if _, err := tw.master.Write([]byte(line + "\n")); err != nil {
		tw.t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(tw.echo.String()) < echoed+len(line)+1 || pending(tw.t, tw.tty) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			tw.t.Fatalf("the watch does not read its terminal:\n%s", tw.so.String())
		}
	}
}

// end types Ctrl-D and waits for the watch's exit code.
func (tw *termWatch) end() int {
	tw.t.Helper()
	tw.master.Write([]byte{4})
	select {
	case code := <-tw.done:
		return code
	case <-time.After(30 * time.Second):
		tw.t.Fatalf("watch did not end:\n%s", tw.so.String())
	}
	return 0
}

// On a terminal, a request whose view changed while the approver answered
// (another approval: 0/2 shown, 1/2 now) is shown again as it now is and
// asked again; nothing is signed for the answer to the old view.
func TestWatchOnATerminalAsksAgainARequestThatChangedWhileAnswered(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "") // quorum 2
	tw := startTermWatch(t, w, "--key", w.key("lead"))
	tw.shown("[a]pprove", 1)
	tw.typeLine("a")
	tw.shown("note (optional): ", 1)
	if _, errOut, code := w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo")); code != cli.ExitPending {
		t.Fatalf("cfo: exit %d: %s", code, errOut)
	}
	tw.typeLine("")
	tw.shown("[a]pprove", 2) // asked again
	if req, _ := w.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusPending || len(req.Votes) != 1 {
		t.Fatalf("the lead's answer to 0/2 was signed at 1/2: %s with %d votes\n%s", req.Status, len(req.Votes), tw.so.String())
	}
	if got := tw.so.String(); !strings.Contains(got, "changed while you answered; nothing signed") || !strings.Contains(got, "quorum:   1/2 approvals") {
		t.Fatalf("the request as it now is was not shown again:\n%s", got)
	}
	tw.typeLine("a") // answered again, as it now is: it decides the request
	tw.shown("note (optional): ", 2)
	tw.typeLine("")
	tw.shown("approved "+out.ApprovalRequestID, 1)
	if code := tw.end(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tw.so.String())
	}
	if req, _ := w.k.Approval(out.ApprovalRequestID); req.Status != approval.StatusApproved || len(req.Votes) != 2 {
		t.Fatalf("answered again, the request is %s with %d votes\n%s", req.Status, len(req.Votes), tw.so.String())
	}
}

// On a terminal, a request chiod refused the vote on (an amendment above
// what the approver was shown: 403, nothing recorded) is offered again
// with chiod's reason while it is still pending, and can be answered.
func TestWatchOnATerminalOffersARefusedRequestAgain(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	tw := startTermWatch(t, w, "--key", w.key("lead"))
	tw.shown("[a]pprove", 1)
	tw.typeLine("m")
	tw.shown("amended arguments (JSON object): ", 1)
	tw.typeLine(`{"customer_id":"cust-1","amount":900,"currency":"USD"}`)
	tw.shown("note (optional): ", 1)
	tw.typeLine("")
	tw.shown("[a]pprove", 2) // offered again
	if got := tw.so.String(); !strings.Contains(got, "amendment refused") || !strings.Contains(got, "Offered again") {
		t.Fatalf("the refusal and the offer were not shown:\n%s", got)
	}
	tw.typeLine("a")
	tw.shown("note (optional): ", 2)
	tw.typeLine("within what I saw")
	tw.shown("approved "+out.ApprovalRequestID, 1)
	if code := tw.end(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, tw.so.String())
	}
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusApproved || len(req.Votes) != 1 || req.Votes[0].Note != "within what I saw" {
		t.Fatalf("the request is %s with %d votes\n%s", req.Status, len(req.Votes), tw.so.String())
	}
	if rec, _ := w.k.Call(out.RequestID); !strings.Contains(string(rec.Output), `"amount":450`) {
		t.Fatalf("the call ran with %s", rec.Output)
	}
}
