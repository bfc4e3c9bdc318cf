package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

const auditCLIPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "echo"
[[servers.tools]]
name = "issue_refund"
action = "charge"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// auditWorld: a kernel with a Merkle log on a real store, served over HTTP,
// holding allowed calls, one refund approved and one denied by a human.
type auditWorld struct {
	url, dir   string
	kernelKey  keys.PublicKey
	approvedID string // receipt id of the approved refund's allow
	// echo submits one more allowed call.
	echo func(id string)
}

func newAuditWorld(t *testing.T) *auditWorld {
	t.Helper()
	dir := t.TempDir()
	kkey := keys.FromSeed(bytes.Repeat([]byte{21}, 32))
	approver := keys.FromSeed(bytes.Repeat([]byte{22}, 32))
	agent := keys.FromSeed(bytes.Repeat([]byte{23}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		DataDir: dir, KernelKey: testkit.Key(kkey), Agent: testkit.Key(agent), Grants: []string{"echo", "refunds"},
		Log: receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour}), Serve: true, AdminToken: "admin", ReadToken: "reader"})
	ctx := context.Background()
	call := func(id, tool string) *kernel.Outcome {
		args := `{"x":1}`
		if tool == "issue_refund" { // valid arguments: the approved refund runs and succeeds
			args = `{"customer_id":"cust-1","amount":450,"currency":"USD"}`
		}
		tc := &kernel.ToolCall{RequestID: id, Capability: tw.CapRaw, Server: "demo", Tool: tool, Arguments: json.RawMessage(args)}
		testkit.Sign(t, tc, agent, time.Now())
		return tw.SubmitCall(t, tc)
	}
	w := &auditWorld{url: tw.URL, dir: dir, kernelKey: kkey.Public()}
	w.echo = func(id string) { call(id, "echo") }
	for i := 0; i < 3; i++ {
		call(fmt.Sprintf("echo-%d", i), "echo")
	}
	for i, decision := range []string{approval.DecisionApproved, approval.DecisionDenied} {
		out := call(fmt.Sprintf("refund-%d", i), "issue_refund")
		raw := tw.Token(t, out.ApprovalRequestID, approver, decision, nil)
		res, err := tw.Kernel.Respond(ctx, out.ApprovalRequestID, raw, "", kernel.ChannelAPI)
		if err != nil {
			t.Fatal(err)
		}
		if decision == approval.DecisionApproved {
			w.approvedID = res.ReceiptID
		}
	}
	return w
}

// chio runs the CLI against w with the reader token.
func (w *auditWorld) chio(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"CHIO_URL": w.url, "CHIO_READ_TOKEN": "reader"}
	code := cli.Main(args, &cli.Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
	return out.String(), errOut.String(), code
}

func TestReceiptAuditCommands(t *testing.T) {
	w := newAuditWorld(t)

	// The seed's four audit commands.
	out, _, code := w.chio(t, "receipt", "list", "--decision", "incomplete", "--meta", "approval_request_id", "--since", "24h")
	if code != 0 || strings.Count(out, "incomplete") != 2 {
		t.Fatalf("pending approvals: %d\n%s", code, out)
	}
	out, _, code = w.chio(t, "receipt", "list", "--decision", "deny", "--guard", "human-approval")
	if code != 0 || !strings.Contains(out, "human-approval") || strings.Count(out, "\n") != 2 {
		t.Fatalf("human denials: %d\n%s", code, out)
	}
	out, _, code = w.chio(t, "receipt", "stats", "--decision", "allow", "--meta", "approver", "--group-by", "metadata.approver_display_name")
	if code != 0 || !strings.Contains(out, "Finance Lead") || !strings.Contains(out, "total 1 receipts") {
		t.Fatalf("approver latency: %d\n%s", code, out)
	}
	out, _, code = w.chio(t, "receipt", "list", "--decision", "allow", "--meta", "auto_approved=true")
	if code != 0 || strings.Count(out, "\n") != 1 { // the header only
		t.Fatalf("auto-approved: %d\n%s", code, out)
	}
	out, _, code = w.chio(t, "receipt", "stats", "--group-by", "decision", "--output", "json")
	var st receipt.StatsResult
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Total != 7 || st.GroupBy != "decision" {
		t.Fatalf("stats json: %d\n%s", code, out)
	}
	if _, errOut, code := w.chio(t, "receipt", "stats", "--group-by", "seq"); code != cli.ExitUsage || !strings.Contains(errOut, "group_by must be") {
		t.Fatalf("bad group-by: %d %s", code, errOut)
	}

	// verify ID: with the server's key (said so), and with a key in hand.
	out, errOut, code := w.chio(t, "receipt", "verify", w.approvedID)
	if code != 0 || !strings.Contains(out, "OK  receipt "+w.approvedID) || !strings.Contains(out, "included in checkpoint tree_size 7") ||
		!strings.Contains(errOut, "trusting kernel key from the server: "+w.kernelKey.String()) {
		t.Fatalf("verify id: %d\n%s\n%s", code, out, errOut)
	}
	other := keys.FromSeed(bytes.Repeat([]byte{99}, 32)).Public().String()
	out, errOut, code = w.chio(t, "receipt", "verify", w.approvedID, "--kernel-key", other)
	if code != cli.ExitError || !strings.Contains(out, "FAIL receipt "+w.approvedID+": receipt signature") || strings.Contains(errOut, "trusting") {
		t.Fatalf("verify id with another key: %d\n%s\n%s", code, out, errOut)
	}

	// verify --all against the live log.
	out, _, code = w.chio(t, "receipt", "verify", "--all", "--kernel-key", w.kernelKey.String())
	if code != 0 || !strings.Contains(out, "OK: every check passed") || !strings.Contains(out, "receipts:    7 (seq 1..7)") ||
		!strings.Contains(out, "2 chains linked") || !strings.Contains(out, "2 approval tokens") || !strings.Contains(out, "deliveries:  0 outcome receipts") {
		t.Fatalf("verify --all: %d\n%s", code, out)
	}

	// export, then verify offline; then a tampered copy fails with where.
	file := filepath.Join(w.dir, "audit.jsonl")
	out, errOut, code = w.chio(t, "receipt", "export", "--out", file)
	if code != 0 || !strings.Contains(out, "(7 receipts)") || !strings.Contains(errOut, "--kernel-key") {
		t.Fatalf("export: %d\n%s%s", code, out, errOut)
	}
	out, _, code = w.chio(t, "receipt", "verify", "--file", file, "--kernel-key", w.kernelKey.String())
	if code != 0 || !strings.Contains(out, "OK: every check passed") {
		t.Fatalf("verify --file: %d\n%s", code, out)
	}
	if _, errOut, code := w.chio(t, "receipt", "verify", "--file", file); code != cli.ExitUsage || !strings.Contains(errOut, "--file needs --kernel-key") {
		t.Fatalf("verify --file without a key: %d %s", code, errOut)
	}
	data, _ := os.ReadFile(file)
	lines := bytes.Split(data, []byte("\n"))
	lines[3] = bytes.Replace(lines[3], []byte(`"seq":3`), []byte(`"seq":9`), 1) // line 4 is seq 3
	bad := filepath.Join(w.dir, "tampered.jsonl")
	os.WriteFile(bad, bytes.Join(lines, []byte("\n")), 0o600)
	out, _, code = w.chio(t, "receipt", "verify", "--file", bad, "--kernel-key", w.kernelKey.String())
	if code != cli.ExitError || !strings.Contains(out, "FAIL line 4: receipt ") || !strings.Contains(out, "(seq 9): signature does not verify") ||
		!strings.Contains(out, "FAILED:") {
		t.Fatalf("tampered file: %d\n%s", code, out)
	}
	// A checkpoint whose root no longer matches is a failure, not "valid".
	// (Its signature then fails too: either way it must not count.)
	zeroRoot := regexp.MustCompile(`"root_hash":"[0-9a-f]{64}"`)
	forged := zeroRoot.ReplaceAll(data, []byte(`"root_hash":"`+strings.Repeat("0", 64)+`"`))
	bad2 := filepath.Join(w.dir, "forged-checkpoints.jsonl")
	os.WriteFile(bad2, forged, 0o600)
	out, _, code = w.chio(t, "receipt", "verify", "--file", bad2, "--kernel-key", w.kernelKey.String())
	if code != cli.ExitError || !strings.Contains(out, "checkpoints: 0 valid, ") || !strings.Contains(out, " FAILED") || strings.Contains(out, "matches the recomputed") {
		t.Fatalf("forged checkpoints: %d\n%s", code, out)
	}
	out, _, _ = w.chio(t, "receipt", "verify", "--file", bad, "--kernel-key", w.kernelKey.String(), "--output", "json")
	var rep receipt.VerifyReport
	if json.Unmarshal([]byte(out), &rep) != nil || rep.OK() || rep.Problems[0].Line != 4 || rep.Problems[0].Seq != 9 {
		t.Fatalf("json report: %s", out)
	}
	if _, errOut, code := w.chio(t, "receipt", "verify"); code != cli.ExitUsage || !strings.Contains(errOut, "exactly one of ID, --all or --file") {
		t.Fatalf("verify without a mode: %d %s", code, errOut)
	}
}
