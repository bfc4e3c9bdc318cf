package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// `chio approval approve ID --amend "$ARGS"` with ARGS unset took the empty
// amendment for none and approved the call as the agent sent it: the
// approver meant to lower the refund and approved the full amount. It is
// refused; nothing is signed and the request stays pending.
func TestApproveRefusesAnEmptyAmendment(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	for _, form := range [][]string{{"--amend", ""}, {"--amend="}} {
		args := append([]string{"approval", "approve", out.ApprovalRequestID, "--key", w.key("cfo")}, form...)
		so, se, code := w.run(adminEnv(), args...)
		if code != cli.ExitUsage || !strings.Contains(se, "--amend") {
			t.Errorf("chio %s: exit %d, want %d naming --amend\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, so, se)
		}
	}
	if rec, _ := w.k.Call(out.RequestID); rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("an empty --amend decided the call: %+v", rec)
	}
}
