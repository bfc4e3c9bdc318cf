package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchSaysAnInputLineWasTooLong: stdin is read a line at a time, at
// most 1 MiB a line. A longer line (a pasted document, a runaway script)
// stopped the reader, and the watch said "end of input" and exited 0 with
// the rest of the input unread, as if every answer had been given. It is
// an error that names the line, and nothing is signed.
func TestWatchSaysAnInputLineWasTooLong(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	stdin := "a\n" + strings.Repeat("x", 2<<20) + "\nlooks fine\n"
	so, se, code := w.watch(t, adminEnv(), strings.NewReader(stdin), "--key", w.key("lead"))
	req, err := w.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 || !strings.Contains(se, "line longer than") || strings.Contains(se, "end of input: watch stopped") ||
		req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("exit %d, request %s with %d votes\n%s\n%s", code, req.Status, len(req.Votes), so, se)
	}
}
