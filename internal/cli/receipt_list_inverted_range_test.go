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

// --since and --until swapped (or equal) select an empty range: listed and
// counted as "0 receipts" with exit 0, an auditor's typo read as "nothing
// happened then".
func TestReceiptListRefusesAnEmptyTimeRange(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{27}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	for _, r := range [][2]string{{"2h", "1h"}, {"1h", "2h"}, {"2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z"}, {"2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00"}} {
		for _, cmd := range []string{"list", "stats"} {
			stdout, stderr, code := chioVia(tw.URL, "receipt", cmd, "--since", r[0], "--until", r[1])
			empty := r[0] == "1h" || r[0] == "2026-01-02T00:00:00Z" || r[1] == "2026-01-01T01:00:00+01:00"
			if empty && (code == 0 || !strings.Contains(stderr, "since")) {
				t.Errorf("receipt %s --since %s --until %s (an empty range): exit %d, want it refused naming since\n%s%s", cmd, r[0], r[1], code, stdout, stderr)
			}
			if !empty && code != 0 {
				t.Errorf("receipt %s --since %s --until %s: exit %d\n%s%s", cmd, r[0], r[1], code, stdout, stderr)
			}
		}
	}
}
