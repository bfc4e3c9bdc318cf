//go:build unix

package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
)

// TestWatchInterruptedWhilePostingAVoteSaysItMayBeRecorded: Ctrl-C while
// the watch posts a signed token. chiod records a vote whatever becomes
// of the connection, so the vote may count. The watch had no handler: the
// signal killed it without a word (or, with the signal caught elsewhere,
// it waited up to two minutes for the answer). Interrupted, it stops at
// once (exit 130) and says the vote may or may not be recorded, where to
// look and that voting again never counts twice.
func TestWatchInterruptedWhilePostingAVoteSaysItMayBeRecorded(t *testing.T) {
	// This test process must outlive the SIGINT it sends itself.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, os.Interrupt)
	defer signal.Stop(caught)

	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	target, _ := url.Parse(w.url)
	over := make(chan struct{}) // the test is over: let go of the request
	// chiod, whose answer to the vote is held back: the vote reaches chiod
	// and is recorded, then the approver presses Ctrl-C.
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/respond") {
			proxyTo(rw, r, target)
			return
		}
		proxyTo(httptest.NewRecorder(), r, target)
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
		select {
		case <-r.Context().Done():
		case <-over:
		}
	}))
	defer srv.Close()
	defer close(over)

	so, se := &reconnectLines{}, &reconnectLines{} // locked buffers
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: strings.NewReader("a\nok\n"), Stdout: so, Stderr: se, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": srv.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("Ctrl-C did not stop the watch posting a vote:\n%s\n%s", so.String(), se.String())
	}
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if code != cli.ExitInterrupted || req.Status != approval.StatusApproved || len(req.Votes) != 1 ||
		!strings.Contains(so.String(), "your vote on "+out.ApprovalRequestID+" may or may not be recorded") ||
		!strings.Contains(so.String(), "chio approval show "+out.ApprovalRequestID) ||
		!strings.Contains(se.String(), "interrupted (SIGINT)") {
		t.Fatalf("exit %d (want %d), request %s with %d votes\n%s\n%s", code, cli.ExitInterrupted, req.Status, len(req.Votes), so.String(), se.String())
	}
}
