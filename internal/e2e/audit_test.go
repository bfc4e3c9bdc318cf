package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

// respondAsHuman does what an approver's client does, over plain HTTP: read
// the request, sign a token with the approver's key, post it. No bearer: the
// signed token is the credential.
func respondAsHuman(t *testing.T, d *daemon, approvalID, decision string, key keys.PrivateKey) string {
	t.Helper()
	var view struct {
		Request approval.Request `json:"request"`
	}
	if code := d.do(t, "GET", "/approvals/"+approvalID, nil, &view); code != 200 {
		t.Fatalf("GET /approvals/%s: %d", approvalID, code)
	}
	tok, err := approval.NewToken(&view.Request, key.Public(), decision, time.Now(), 10*time.Minute).Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]json.RawMessage{"token": tok})
	resp, err := http.Post(d.url+"/approvals/"+approvalID+"/respond", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var res struct {
		Outcome   string `json:"outcome"`
		ReceiptID string `json:"receipt_id"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(data, &res) != nil || res.Outcome != decision {
		t.Fatalf("respond %s: %d %s", decision, resp.StatusCode, data)
	}
	return res.ReceiptID
}

// The auditors' side against a real chiod: the seed's four audit commands,
// then verification of single receipts, the whole log and an offline export,
// across a restart.
func TestAuditCommands(t *testing.T) {
	root := repoRoot()
	work := t.TempDir()
	data := filepath.Join(work, "data")
	config := filepath.Join(root, "internal", "e2e", "testdata", "audit.toml")
	d := startDaemon(t, config, data)
	lead, err := keys.LoadPrivateKey(filepath.Join(root, "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, d, "echo", "files", "refunds", "autorefunds")
	ctx := context.Background()
	post := func(id, server, tool, args, intent string, want int) string {
		t.Helper()
		code, out, err := postCall(ctx, http.DefaultClient, d.url, a.call(t, id, server, tool, args, intent))
		if err != nil || code != want {
			t.Fatalf("%s: %d %+v %v", id, code, out, err)
		}
		return out.ApprovalRequestID
	}
	const intent = `{"purpose":"refund order 8834","max_amount":{"units":500,"currency":"USD"}}`
	post("echo-1", "demo", "echo", `{"x":1}`, "", 200)
	post("echo-2", "demo", "echo", `{"x":2}`, "", 200)
	post("rm-1", "demo", "delete_file", `{"path":"/etc/shadow"}`, "", 403)
	approved := post("refund-approve", "demo", "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`, intent, 202)
	denied := post("refund-deny", "demo", "issue_refund", `{"customer_id":"cust-1","amount":451,"currency":"USD"}`, intent, 202)
	waiting := post("refund-wait", "demo", "issue_refund", `{"customer_id":"cust-1","amount":452,"currency":"USD"}`, intent, 202)
	auto := post("refund-auto", "autopay", "issue_refund", `{"customer_id":"cust-1","amount":453,"currency":"USD"}`, "", 202)

	allowID := respondAsHuman(t, d, approved, approval.DecisionApproved, lead)
	respondAsHuman(t, d, denied, approval.DecisionDenied, lead)
	// The advisory timeout fires after a second.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var call struct {
			Status string `json:"status"`
		}
		d.do(t, "GET", "/v1/calls/refund-auto", nil, &call)
		if call.Status == "allowed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("auto-approval did not happen: %+v\n%s", call, d.log())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// 1. Pending approvals in the last day: every incomplete receipt.
	out, errOut, code := d.chio(t, work, "receipt", "list", "--decision", "incomplete", "--meta", "approval_request_id", "--since", "24h")
	if code != 0 || !strings.Contains(errOut, "4 receipts") {
		t.Fatalf("list incomplete: %d\n%s\n%s", code, out, errOut)
	}
	for _, id := range []string{approved, denied, waiting, auto} {
		if !strings.Contains(out, "approval_request_id="+id) {
			t.Errorf("incomplete list lacks %s:\n%s", id, out)
		}
	}
	// 2. Human-denied calls.
	out, errOut, code = d.chio(t, work, "receipt", "list", "--decision", "deny", "--guard", "human-approval", "--output", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 0 || !strings.Contains(out, denied) || !strings.Contains(out, `"guard":"human-approval"`) {
		t.Fatalf("list human denials: %d\n%s\n%s", code, out, errOut)
	}
	// 3. Approval latency per approver.
	out, errOut, code = d.chio(t, work, "receipt", "stats", "--decision", "allow", "--meta", "approver", "--group-by", "metadata.approver_display_name")
	if code != 0 || !strings.Contains(out, "Finance Lead") || !strings.Contains(out, "chio kernel (auto_approve_advisory)") || !strings.Contains(out, "total 2 receipts") {
		t.Fatalf("stats: %d\n%s\n%s", code, out, errOut)
	}
	out, _, _ = d.chio(t, work, "receipt", "stats", "--decision", "allow", "--meta", "approver", "--group-by", "metadata.approver_display_name", "--output", "json")
	var st receipt.StatsResult
	if json.Unmarshal([]byte(out), &st) != nil || st.Total != 2 || st.Groups[0].LatencyMs == nil {
		t.Fatalf("stats json: %s", out)
	}
	// 4. Auto-approved at timeout, flagged for review.
	out, errOut, code = d.chio(t, work, "receipt", "list", "--decision", "allow", "--meta", "auto_approved=true", "--output", "jsonl")
	if code != 0 || strings.Count(out, "\n") != 0 || !strings.Contains(out, auto) || !strings.Contains(out, `"review_required":true`) {
		t.Fatalf("list auto-approved: %d\n%s\n%s", code, out, errOut)
	}

	// Verification, with the kernel key read from the data dir (the
	// auditor's independent copy), not from the server.
	kk, err := keys.LoadPrivateKey(filepath.Join(data, "kernel.pem"))
	if err != nil {
		t.Fatal(err)
	}
	kernelKey := kk.Public().String()
	out, errOut, code = d.chio(t, work, "receipt", "verify", allowID, "--kernel-key", kernelKey)
	if code != 0 || !strings.Contains(out, "OK  receipt "+allowID) || strings.Contains(errOut, "trusting") {
		t.Fatalf("verify id: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = d.chio(t, work, "receipt", "verify", allowID)
	if code != 0 || !strings.Contains(errOut, "trusting kernel key from the server: "+kernelKey) {
		t.Fatalf("verify id, server's key: %d\n%s\n%s", code, out, errOut)
	}
	verifyAll := func() string {
		t.Helper()
		out, errOut, code := d.chio(t, work, "receipt", "verify", "--all", "--kernel-key", kernelKey)
		if code != 0 || !strings.Contains(out, "OK: every check passed") || !strings.Contains(out, "3 approval tokens") {
			t.Fatalf("verify --all: %d\n%s\n%s", code, out, errOut)
		}
		return out
	}
	verifyAll()
	export := filepath.Join(work, "audit.jsonl")
	if out, errOut, code := d.chio(t, work, "receipt", "export", "--out", export); code != 0 {
		t.Fatalf("export: %d\n%s\n%s", code, out, errOut)
	}

	// A restart reloads the log and checks it against the signed head; the
	// log keeps verifying and keeps growing.
	d.stop()
	d = startDaemon(t, config, data)
	post("echo-3", "demo", "echo", `{"x":3}`, "", 200)
	if out := verifyAll(); !strings.Contains(out, "receipts:    11 (seq 1..11)") {
		t.Fatalf("after restart:\n%s", out)
	}

	// Offline: no daemon at all.
	d.stop()
	out, errOut, code = d.chio(t, work, "receipt", "verify", "--file", export, "--kernel-key", kernelKey)
	if code != 0 || !strings.Contains(out, "receipts:    10 (seq 1..10)") || !strings.Contains(out, "OK: every check passed") {
		t.Fatalf("verify --file: %d\n%s\n%s", code, out, errOut)
	}
	raw, _ := os.ReadFile(export)
	tampered := filepath.Join(work, "tampered.jsonl")
	os.WriteFile(tampered, bytes.Replace(raw, []byte(`"decision":"approved"`), []byte(`"decision":"denied"`), 1), 0o600)
	out, _, code = d.chio(t, work, "receipt", "verify", "--file", tampered, "--kernel-key", kernelKey)
	if code != 1 || !strings.Contains(out, "signature by approver "+lead.Public().String()+" does not verify") {
		t.Fatalf("tampered token: %d\n%s", code, out)
	}
}
