package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// A time bound in days ("7d") was read with Sscanf("%dd"), which ignores
// what follows and multiplies without a bound: --since 1d7d (a typo for
// 17d) listed one day's receipts, and --since 200000d (everything) counted
// back past time.Duration's range to a time decades ahead, and listed
// nothing. Each exited 0, as if that were the answer.
func TestReceiptListSinceDaysIsReadWholeOrRefused(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{23}, 32))
	start := time.Now().Add(-3 * 24 * time.Hour)
	fake := clock.NewFake(start)
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Clock: fake, Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	fake.Set(start.Add(3 * 24 * time.Hour)) // the receipt is 3 days old
	for _, since := range []string{"1d7d", "7dd", "200000d", "9223372036854775807d"} {
		stdout, stderr, code := chioVia(tw.URL, "receipt", "list", "--since", since, "--output", "jsonl")
		if code == 0 && !strings.Contains(stdout, out.ReceiptID) {
			t.Errorf("receipt list --since %s: exit 0 without the receipt of 3 days ago (the bound was misread)\n%s%s", since, stdout, stderr)
		}
		if code == 0 && since != "200000d" {
			t.Errorf("receipt list --since %s: exit 0; want it refused as no duration\n%s", since, stdout)
		}
	}
	// What a person types still works.
	for since, listed := range map[string]bool{"7d": true, "2d": false, "+4d": true} {
		stdout, stderr, code := chioVia(tw.URL, "receipt", "list", "--since", since, "--output", "jsonl")
		if code != 0 || strings.Contains(stdout, out.ReceiptID) != listed {
			t.Errorf("receipt list --since %s: exit %d, listed %v, want listed %v\n%s%s", since, code, !listed, listed, stdout, stderr)
		}
	}
}
