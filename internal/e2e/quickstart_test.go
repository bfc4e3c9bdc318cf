package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/receipt"
)

// TestQuickStart walks the README's newcomer path with the real binaries:
// an allowed, a denied and a pending call, then the receipts.
func TestQuickStart(t *testing.T) {
	work := t.TempDir()
	d := startDaemon(t, filepath.Join(repoRoot(), "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))

	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 || !strings.HasPrefix(pub, "ed25519:") {
		t.Fatalf("keygen: %q %d", pub, code)
	}
	if shown, _, _ := d.chio(t, work, "keygen", "--show", "agent.pem"); shown != pub {
		t.Fatalf("keygen --show %q != %q", shown, pub)
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "echo", "--grant", "refunds", "--grant", "files", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %d %s", code, errOut)
	}
	base := []string{"--capability", "agent.cap", "--key", "agent.pem"}

	out, errOut, code := d.chio(t, work, append([]string{"call", "demo", "echo", "--args", `{"hello":"world"}`}, base...)...)
	if code != 0 || !strings.Contains(out, `"hello":"world"`) {
		t.Fatalf("allowed call: exit %d out %q err %q", code, out, errOut)
	}
	out, _, code = d.chio(t, work, append([]string{"call", "demo", "delete_file", "--args", `{"path":"/etc/passwd"}`}, base...)...)
	if code != 4 || !strings.Contains(out, "forbidden_paths") {
		t.Fatalf("denied call: exit %d out %q", code, out)
	}
	out, errOut, code = d.chio(t, work, append([]string{"call", "demo", "issue_refund",
		"--args", `{"customer_id":"cust-9012","amount":450,"currency":"USD"}`,
		"--intent", `{"purpose":"Customer requested refund for order #8834","max_amount":{"units":450,"currency":"USD"}}`}, base...)...)
	if code != 3 || !strings.HasPrefix(out, "ar-") || !strings.Contains(errOut, "chio await") {
		t.Fatalf("pending call: exit %d out %q err %q", code, out, errOut)
	}
	pending := out
	// Machine-readable output for scripts.
	out, _, code = d.chio(t, work, append([]string{"call", "demo", "echo", "--args", `{}`, "--output", "json"}, base...)...)
	var o map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &o) != nil || o["status"] != "allowed" {
		t.Fatalf("json output: %d %q", code, out)
	}

	// Receipts: every decision is there and verifies under the kernel key.
	var health struct {
		KernelKey string `json:"kernel_key"`
	}
	d.do(t, "GET", "/healthz", nil, &health)
	kk, err := keys.ParsePublicKey(health.KernelKey)
	if err != nil {
		t.Fatal(err)
	}
	out, _, code = d.chio(t, work, "receipt", "list", "--output", "jsonl")
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) != 4 {
		t.Fatalf("receipt list: %d, %d lines:\n%s", code, len(lines), out)
	}
	verdicts := map[string]int{}
	for _, l := range lines {
		r, err := receipt.Verify([]byte(l), kk)
		if err != nil {
			t.Fatal(err)
		}
		verdicts[r.Decision.Verdict]++
	}
	if verdicts["allow"] != 2 || verdicts["deny"] != 1 || verdicts["incomplete"] != 1 {
		t.Fatalf("verdicts %v", verdicts)
	}
	out, _, code = d.chio(t, work, "receipt", "list", "--decision", "deny", "--guard", "forbidden_paths")
	if code != 0 || !strings.Contains(out, "delete_file") || strings.Contains(out, "echo") {
		t.Fatalf("filtered table:\n%s", out)
	}
	out, _, code = d.chio(t, work, "receipt", "list", "--decision", "incomplete", "--meta", "approval_request_id", "--since", "24h", "--output", "json")
	var arr []json.RawMessage
	if code != 0 || json.Unmarshal([]byte(out), &arr) != nil || len(arr) != 1 {
		t.Fatalf("seed query: %d %s", code, out)
	}
	var first receipt.Receipt
	json.Unmarshal(arr[0], &first)
	shown, _, code := d.chio(t, work, "receipt", "show", first.ID)
	if code != 0 || !strings.Contains(shown, first.ID) {
		t.Fatalf("receipt show: %d %s", code, shown)
	}
	// The approver decides from the terminal, the agent's await ends with
	// the output and the note, and the whole log verifies: the README's
	// last steps.
	approver := filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem")
	out, errOut, code = d.chio(t, work, "approval", "approve", pending, "--key", approver, "--note", "customer verified")
	if code != 0 || !strings.Contains(out, "approved "+pending+": executed") {
		t.Fatalf("approval approve: exit %d out %q err %q", code, out, errOut)
	}
	out, errOut, code = d.chio(t, work, "await", pending, "--key", "agent.pem")
	if code != 0 || !strings.Contains(out, `"refund_id"`) || !strings.Contains(errOut, "note: customer verified") {
		t.Fatalf("await: exit %d out %q err %q", code, out, errOut)
	}
	out, errOut, code = d.chio(t, work, "receipt", "verify", "--all")
	if code != 0 || !strings.Contains(out, "OK: every check passed") {
		t.Fatalf("receipt verify --all: exit %d out %q err %q", code, out, errOut)
	}
	// Policy check of the shipped file.
	if out, _, code := d.chio(t, work, "policy", "check", filepath.Join(repoRoot(), "examples", "policies", "quickstart.toml")); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("policy check: %d %s", code, out)
	}
}
