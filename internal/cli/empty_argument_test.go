package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// An argument given empty (`chio capability revoke "$CAP_ID"` with CAP_ID
// unset) is a usage error naming it, before chiod is asked: revoke sent
// POST /v1/capabilities//revoke and exited 1 with "a redirect (307)",
// which says nothing about the empty id; approve sent another path.
func TestEmptyArgumentIsAUsageError(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.refund(t, 450)
	for _, args := range [][]string{
		{"capability", "revoke", ""},
		{"approval", "approve", "", "--key", w.key("cfo")},
		{"approval", "show", ""},
	} {
		so, se, code := w.run(adminEnv(), args...)
		if code != cli.ExitUsage || !strings.Contains(se, "is empty") {
			t.Errorf("chio %q: exit %d, want %d saying the argument is empty\n%s%s", args, code, cli.ExitUsage, so, se)
		}
	}
	if rec, _ := w.k.Call(out.RequestID); rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("an empty argument changed a call: %+v", rec)
	}
}
