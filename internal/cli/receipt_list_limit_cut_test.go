package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// `receipt list` stops at --limit (100 unless given) and said only "N
// receipts, each signature VERIFIED": a list cut short by the limit looked
// like every receipt the filters match, and an auditor counting denies
// counted 100 of however many chiod had.
func TestReceiptListSaysWhenTheLimitCutTheList(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{25}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	for i := range 3 {
		out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", fmt.Sprintf(`{"x":%d}`, i), ""))
		if out.Status != kernel.StatusAllowed {
			t.Fatalf("call %d: %+v", i, out)
		}
	}
	for _, order := range []string{"asc", "desc"} {
		_, stderr, code := chioVia(tw.URL, "receipt", "list", "--limit", "2", "--order", order)
		if code != 0 || !strings.Contains(stderr, "more receipts match") {
			t.Errorf("receipt list --limit 2 --order %s of 3 receipts: exit %d, and stderr does not say more match\n%s", order, code, stderr)
		}
		// Exactly the limit, or fewer: nothing was cut.
		for _, limit := range []string{"3", "4"} {
			_, stderr, code = chioVia(tw.URL, "receipt", "list", "--limit", limit, "--order", order)
			if code != 0 || strings.Contains(stderr, "more receipts match") {
				t.Errorf("receipt list --limit %s --order %s of 3 receipts: exit %d, and stderr says more match\n%s", limit, order, code, stderr)
			}
		}
	}
}
