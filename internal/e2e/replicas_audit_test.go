package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// The auditors' side on PostgreSQL, across replicas: receipts decided on
// three replicas are listed, counted, shown and verified through any of
// them (proofs against checkpoints another replica signed included), the
// export verifies offline, and a restarted replica keeps the one log.
func TestReplicasAudit(t *testing.T) {
	srv := startPostgres(t)
	root := repoRoot()
	work := t.TempDir()
	policy, err := os.ReadFile(filepath.Join(root, "internal", "e2e", "testdata", "audit.toml"))
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, srv, string(policy), 3)
	lead, err := keys.LoadPrivateKey(filepath.Join(root, "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, c.node(0), "echo", "files", "refunds", "autorefunds")
	post := func(n int, id, server, tool, args, intent string, want int) string {
		t.Helper()
		code, out, err := postCall(context.Background(), http.DefaultClient, c.node(n).url, a.call(t, id, server, tool, args, intent))
		if err != nil || code != want {
			t.Fatalf("%s on replica %d: %d %+v %v", id, n, code, out, err)
		}
		return out.ApprovalRequestID
	}
	const intent = `{"purpose":"refund order 8834","max_amount":{"units":500,"currency":"USD"}}`
	post(0, "echo-1", "demo", "echo", `{"x":1}`, "", 200)
	post(1, "echo-2", "demo", "echo", `{"x":2}`, "", 200)
	post(2, "rm-1", "demo", "delete_file", `{"path":"/etc/shadow"}`, "", 403)
	approved := post(0, "refund-approve", "demo", "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`, intent, 202)
	denied := post(1, "refund-deny", "demo", "issue_refund", `{"customer_id":"cust-1","amount":451,"currency":"USD"}`, intent, 202)
	post(2, "refund-wait", "demo", "issue_refund", `{"customer_id":"cust-1","amount":452,"currency":"USD"}`, intent, 202)
	post(0, "refund-auto", "autopay", "issue_refund", `{"customer_id":"cust-1","amount":453,"currency":"USD"}`, "", 202)
	allowID := respondAsHuman(t, c.node(1), approved, approval.DecisionApproved, lead)
	respondAsHuman(t, c.node(2), denied, approval.DecisionDenied, lead)
	waitFor(t, "the advisory auto-approval", func() bool {
		var call struct {
			Status string `json:"status"`
		}
		c.node(2).do(t, "GET", "/v1/calls/refund-auto", nil, &call)
		return call.Status == "allowed"
	})

	out, errOut, code := c.node(2).chio(t, work, "receipt", "list", "--decision", "incomplete", "--meta", "approval_request_id", "--since", "24h")
	if code != 0 || !strings.Contains(errOut, "4 receipts") {
		t.Fatalf("list incomplete: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = c.node(1).chio(t, work, "receipt", "list", "--decision", "deny", "--guard", "human-approval", "--output", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 0 || !strings.Contains(out, denied) {
		t.Fatalf("list human denials: %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = c.node(0).chio(t, work, "receipt", "stats", "--decision", "allow", "--meta", "approver", "--group-by", "metadata.approver_display_name", "--output", "json")
	var st receipt.StatsResult
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Total != 2 || st.Groups[0].LatencyMs == nil {
		t.Fatalf("stats: %d %s", code, out)
	}
	out, errOut, code = c.node(2).chio(t, work, "receipt", "list", "--decision", "allow", "--meta", "auto_approved=true", "--output", "jsonl")
	if code != 0 || !strings.Contains(out, `"review_required":true`) {
		t.Fatalf("list auto-approved: %d\n%s\n%s", code, out, errOut)
	}
	// Cursor paging through another replica returns each receipt once.
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		var page struct {
			Receipts   []map[string]any `json:"receipts"`
			NextCursor string           `json:"next_cursor"`
		}
		c.node(pages%3).do(t, "GET", "/v1/receipts?limit=3&cursor="+cursor, nil, &page)
		for _, r := range page.Receipts {
			id := r["id"].(string)
			if seen[id] {
				t.Fatalf("receipt %s on two pages", id)
			}
			seen[id] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	// 6 decisions and 4 parked calls.
	if len(seen) != 10 {
		t.Fatalf("paged %d receipts, want 10", len(seen))
	}

	kk, err := keys.LoadPrivateKey(filepath.Join(c.dirs[0], "kernel.pem"))
	if err != nil {
		t.Fatal(err)
	}
	kernelKey := kk.Public().String()
	if out, errOut, code := c.node(0).chio(t, work, "receipt", "show", allowID); code != 0 || !strings.Contains(out, allowID) {
		t.Fatalf("show: %d\n%s\n%s", code, out, errOut)
	}
	for n := 0; n < 3; n++ {
		out, errOut, code := c.node(n).chio(t, work, "receipt", "verify", allowID, "--kernel-key", kernelKey)
		if code != 0 || !strings.Contains(out, "OK  receipt "+allowID) {
			t.Fatalf("verify %s through replica %d: %d\n%s\n%s", allowID, n, code, out, errOut)
		}
	}
	verifyAll := func(n int) string {
		t.Helper()
		out, errOut, code := c.node(n).chio(t, work, "receipt", "verify", "--all", "--kernel-key", kernelKey)
		if code != 0 || !strings.Contains(out, "OK: every check passed") || !strings.Contains(out, "3 approval tokens") {
			t.Fatalf("verify --all through replica %d: %d\n%s\n%s", n, code, out, errOut)
		}
		return out
	}
	verifyAll(1)
	export := filepath.Join(work, "audit.jsonl")
	if out, errOut, code := c.node(2).chio(t, work, "receipt", "export", "--out", export); code != 0 {
		t.Fatalf("export: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = c.node(0).chio(t, work, "receipt", "verify", "--file", export, "--kernel-key", kernelKey)
	if code != 0 || !strings.Contains(out, "receipts:    10 (seq 1..10)") {
		t.Fatalf("verify --file: %d\n%s\n%s", code, out, errOut)
	}

	// A restarted replica reloads the one log, checks it against the signed
	// head, and keeps appending to it.
	c.node(0).stop()
	c.restart(0)
	post(0, "echo-3", "demo", "echo", `{"x":3}`, "", 200)
	post(1, "echo-4", "demo", "echo", `{"x":4}`, "", 200)
	time.Sleep(200 * time.Millisecond)
	if out := verifyAll(2); !strings.Contains(out, "receipts:    12 (seq 1..12)") {
		t.Fatalf("after a restart:\n%s", out)
	}
}
