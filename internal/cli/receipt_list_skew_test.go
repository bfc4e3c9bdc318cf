package cli_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// `receipt list --since 1h` asks chiod for the receipts of the hour before
// chiod's now; the CLI held each receipt to the hour before ITS now. With
// chiod's clock two seconds behind the auditor's (ordinary skew between two
// machines), an honest receipt at the edge of chiod's window was refused as
// one "the query excludes", and nothing was listed.
func TestReceiptListSinceADurationToleratesChiodsClock(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{22}, 32))
	now := time.Now()
	fake := clock.NewFake(now.Add(-time.Hour - time.Second)) // the receipt's time, by chiod's clock
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Clock: fake, Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	fake.Set(now.Add(-2 * time.Second)) // chiod's clock, 2 s behind the auditor's
	stdout, stderr, code := chioVia(tw.URL, "receipt", "list", "--since", "1h", "--output", "jsonl")
	if code != 0 || !bytes.Contains([]byte(stdout), []byte(out.ReceiptID)) {
		t.Fatalf("receipt list --since 1h against an honest chiod 2 s behind: exit %d\n%s%s", code, stdout, stderr)
	}
}
