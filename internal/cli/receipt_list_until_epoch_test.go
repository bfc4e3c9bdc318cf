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

// A filter's time bound of 0 stands for "no bound", and --until
// 1970-01-01T00:00:00Z (or any time within its first millisecond) parses
// to 0: the bound before which no receipt lies listed and counted every
// receipt, with exit 0.
func TestReceiptListUntilTheEpochIsNoUnboundedList(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{24}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	for _, until := range []string{"1970-01-01T00:00:00Z", "1970-01-01T00:00:00.0009Z", "1970-01-01T01:00:00+01:00"} {
		stdout, stderr, code := chioVia(tw.URL, "receipt", "list", "--until", until, "--output", "jsonl")
		if code == 0 && strings.Contains(stdout, out.ReceiptID) {
			t.Errorf("receipt list --until %s: exit 0 listing a receipt of today\n%s%s", until, stdout, stderr)
		}
		stdout, stderr, code = chioVia(tw.URL, "receipt", "stats", "--until", until, "--output", "json")
		if code == 0 && !strings.Contains(stdout, `"total": 0`) {
			t.Errorf("receipt stats --until %s: exit 0 counting receipts of today\n%s%s", until, stdout, stderr)
		}
	}
}
