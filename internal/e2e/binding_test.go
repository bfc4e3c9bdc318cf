package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 10's measured attacks, replayed exactly as reported, through the
// real binaries (chiod, chio) on the quick-start policy.
func TestBindingAttacksThroughTheCLI(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	// A copy of the quick start the test can edit and reload.
	policyText, err := os.ReadFile(filepath.Join(root, "examples", "policies", "quickstart.toml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(work, "chio.toml")
	hidden := strings.Replace(string(policyText), "expose_arguments = true", "expose_arguments = false", 1)
	if hidden == string(policyText) {
		t.Fatal("quickstart.toml no longer sets expose_arguments on refunds; update this test")
	}
	if err := os.WriteFile(config, []byte(hidden), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config, filepath.Join(work, "data"))
	leadKey := filepath.Join(root, "examples", "keys", "finance-lead.pem")
	cfoKey := filepath.Join(root, "examples", "keys", "cfo.pem")
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatal("keygen")
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "refunds", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %s", errOut)
	}
	call := func(args, intent string) (string, string, int) {
		return d.chio(t, work, "call", "demo", "issue_refund", "--args", args, "--intent", intent, "--capability", "agent.cap", "--key", "agent.pem")
	}

	t.Run("a lying intent does not skip the threshold", func(t *testing.T) {
		out, errOut, code := call(`{"customer_id":"cust-9012","amount":450000,"currency":"USD"}`, `{"purpose":"tiny","max_amount":{"units":1,"currency":"USD"}}`)
		if code != 4 || !strings.Contains(out+errOut, "intent_envelope") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("another currency asks a human", func(t *testing.T) {
		id, errOut, code := call(`{"customer_id":"cust-9012","amount":199,"currency":"BTC"}`, `{"purpose":"refund in BTC"}`)
		if code != 3 || !strings.HasPrefix(id, "ar-") {
			t.Fatalf("exit %d %q %s", code, id, errOut)
		}
	})

	refund := `{"customer_id":"cust-9012","amount":300,"currency":"USD"}`
	intent := `{"purpose":"Refund order #8834","max_amount":{"units":300,"currency":"USD"}}`
	t.Run("an approver cannot rewrite what they cannot see", func(t *testing.T) {
		id, _, code := call(refund, intent)
		if code != 3 {
			t.Fatalf("call: exit %d", code)
		}
		out, errOut, code := d.chio(t, work, "approval", "approve", id, "--key", leadKey,
			"--amend", `{"customer_id":"cust-EVIL","amount":99999,"currency":"USD"}`)
		if code == 0 || !strings.Contains(out+errOut, "expose_arguments") {
			t.Fatalf("amend accepted: exit %d\n%s\n%s", code, out, errOut)
		}
		var st struct {
			Status string `json:"status"`
		}
		if d.do(t, "GET", "/approvals/"+id, nil, &st); st.Status != "pending" {
			t.Fatalf("refused amendment changed the request: %s", st.Status)
		}
	})

	t.Run("a removed approver cannot vote after a reload", func(t *testing.T) {
		id, _, code := call(refund, intent)
		if code != 3 {
			t.Fatalf("call: exit %d", code)
		}
		// Remove the CFO from the grant and reload with SIGHUP.
		cfoBlock := "[[grants.approval.approvers]]\npublic_key = \"ed25519:264f3c00fa147d83e3a89432b2385a42a28b76f2f685838a111c86d28d5d7588\""
		i := strings.Index(hidden, cfoBlock)
		if i < 0 {
			t.Fatal("quickstart.toml no longer lists the CFO as a refunds approver; update this test")
		}
		rest := hidden[i+len(cfoBlock):]
		end := strings.Index(rest, "\n\n")
		without := hidden[:i] + rest[end+2:]
		if err := os.WriteFile(config, []byte(without), 0o600); err != nil {
			t.Fatal(err)
		}
		before := strings.Count(d.log(), "policy reloaded")
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(d.log(), "policy reloaded") == before {
			if time.Now().After(deadline) {
				t.Fatalf("no reload:\n%s", d.log())
			}
			time.Sleep(50 * time.Millisecond)
		}
		out, errOut, code := d.chio(t, work, "approval", "approve", id, "--key", cfoKey)
		if code == 0 || !strings.Contains(out+errOut, "not trusted") {
			t.Fatalf("removed approver approved: exit %d\n%s\n%s", code, out, errOut)
		}
		out, errOut, code = d.chio(t, work, "approval", "approve", id, "--key", leadKey)
		if code != 0 || !strings.Contains(out, "executed") {
			t.Fatalf("remaining approver: exit %d\n%s\n%s", code, out, errOut)
		}
	})
}
