package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// The seed's "pending approvals" query lists every suspension of the
// window; the STATUS column says which are still pending, and
// --still-pending keeps only those.
func TestReceiptListPendingStatus(t *testing.T) {
	w := newApprovalWorld(t)
	waiting := w.refund(t, 450)
	decided := w.refund(t, 500)
	if _, _, code := w.run(adminEnv(), "approval", "deny", decided.ApprovalRequestID, "--key", w.key("lead"), "--reason", "no"); code != 0 {
		t.Fatalf("deny: %d", code)
	}
	seed := []string{"receipt", "list", "--decision", "incomplete", "--meta", "approval_request_id", "--since", "24h"}
	so, se, code := w.run(adminEnv(), seed...)
	status := func(id string) string { // the STATUS column of id's row
		for _, l := range strings.Split(so, "\n") {
			if f := strings.Fields(l); strings.Contains(l, id) && len(f) > 6 {
				return f[6]
			}
		}
		return ""
	}
	if code != 0 || !strings.Contains(so, "STATUS") || status(waiting.ApprovalRequestID) != "pending" || status(decided.ApprovalRequestID) != "denied" {
		t.Fatalf("seed query: %d\n%s%s", code, so, se)
	}
	so, _, code = w.run(adminEnv(), append(seed, "--still-pending")...)
	if code != 0 || !strings.Contains(so, waiting.ApprovalRequestID) || strings.Contains(so, decided.ApprovalRequestID) {
		t.Fatalf("--still-pending: %d\n%s", code, so)
	}
	so, _, code = w.run(adminEnv(), "receipt", "list", "--still-pending", "--output", "jsonl")
	lines := strings.Split(strings.TrimSpace(so), "\n")
	var rc receipt.Receipt
	if code != 0 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &rc) != nil || rc.Metadata["approval_request_id"] != waiting.ApprovalRequestID {
		t.Fatalf("--still-pending jsonl: %d\n%s", code, so)
	}
	if _, se, code := w.run(adminEnv(), "receipt", "list", "--still-pending", "--decision", "allow"); code != cli.ExitUsage || !strings.Contains(se, "--still-pending lists incomplete receipts") {
		t.Fatalf("--still-pending --decision allow: %d %s", code, se)
	}
	// A reader without access to approvals cannot say what is still
	// pending: --still-pending fails rather than guess.
	if _, se, code := w.run(map[string]string{}, "receipt", "list", "--still-pending"); code != cli.ExitError || !strings.Contains(se, "unauthorized") {
		t.Fatalf("no token: %d %s", code, se)
	}
}

const autoPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "refunds"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 60
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// Grouped by approver, the kernel's auto-approvals are not counted as a
// person: they are listed apart.
func TestReceiptStatsKernelIsNotAnApprover(t *testing.T) {
	lead, _ := keys.Generate(nil)
	fake := clock.NewFake(time.Now())
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(autoPolicy, lead.Public()), Clock: fake,
		Grants: []string{"refunds"}, Serve: true, AdminToken: approvalAdminToken})
	human := w.Submit(t, "echo", `{"n":1}`, "")
	if _, err := w.Kernel.Respond(context.Background(), human.ApprovalRequestID, w.Token(t, human.ApprovalRequestID, lead, approval.DecisionApproved, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	auto := w.Submit(t, "echo", `{"n":2}`, "")
	fake.Advance(61 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; {
		// Done once the call ran and its allow receipt is committed.
		if rec, _ := w.Kernel.Call(auto.RequestID); rec != nil && rec.Status == kernel.StatusAllowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no auto-approval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	seed := []string{"receipt", "stats", "--decision", "allow", "--meta", "approver", "--group-by", "metadata.approver_display_name"}
	so, se, code := chio(env, seed...)
	people, kernelPart, found := strings.Cut(so, "not a person")
	if code != 0 || !found || !strings.Contains(people, "Finance Lead") || strings.Contains(people, "chio kernel") ||
		!strings.Contains(kernelPart, "chio kernel (auto_approve_advisory)  1") || !strings.Contains(so, "total 2 receipts") {
		t.Fatalf("stats: %d\n%s%s", code, so, se)
	}
	so, _, code = chio(env, append(seed, "--output", "json")...)
	var res struct {
		Total  uint64 `json:"total"`
		Groups []struct {
			Key   string `json:"key"`
			Count uint64 `json:"count"`
		} `json:"groups"`
		Auto []struct {
			Key   string `json:"key"`
			Count uint64 `json:"count"`
		} `json:"auto_approved"`
	}
	if code != 0 || json.Unmarshal([]byte(so), &res) != nil || res.Total != 2 || len(res.Groups) != 1 || res.Groups[0].Key != "Finance Lead" ||
		len(res.Auto) != 1 || res.Auto[0].Count != 1 {
		t.Fatalf("stats json: %d %s", code, so)
	}
	// Not grouped by approver, nothing is set apart.
	so, _, code = chio(env, "receipt", "stats", "--decision", "allow")
	if code != 0 || strings.Contains(so, "not a person") || !strings.Contains(so, "all    2") {
		t.Fatalf("plain stats: %d\n%s", code, so)
	}
}
