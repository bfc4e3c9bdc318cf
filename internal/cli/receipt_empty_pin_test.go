package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// An auditor's pin given an empty value was taken for none: `chio receipt
// verify --all --kernel-key "$KERNEL_KEY"` with the variable unset trusted
// whatever key the server named, and `chio receipt checkpoint --since
// "$SAVED"` proved nothing, each with exit 0: the very check the flag asks
// for silently skipped. They are refused.
func TestReceiptPinGivenEmptyIsRefused(t *testing.T) {
	w := newAuditWorld(t)
	for _, args := range [][]string{
		{"receipt", "list", "--kernel-key="},
		{"receipt", "show", w.approvedID, "--kernel-key="},
		{"receipt", "verify", w.approvedID, "--kernel-key="},
		{"receipt", "verify", "--all", "--kernel-key="},
		{"receipt", "verify", "--all", "--kernel-key", w.kernelKey.String(), "--checkpoint="},
		{"receipt", "checkpoint", "--kernel-key="},
		{"receipt", "checkpoint", "--kernel-key", w.kernelKey.String(), "--since="},
	} {
		flag := strings.TrimSuffix(args[len(args)-1], "=")
		so, se, code := w.chio(t, args...)
		if code != cli.ExitUsage || !strings.Contains(se, flag) {
			t.Errorf("chio %s: exit %d, want %d naming %s\n%s%s", strings.Join(args, " "), code, cli.ExitUsage, flag, so, se)
		}
	}
}
