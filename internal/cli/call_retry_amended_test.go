package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// A retry (--request-id) of a call an approver approved with amended
// arguments returns the amended call's output. chiod's answer carries the
// approval (amended_arguments) precisely so that the agent learns of the
// change; chio call must pass it on as chio await does — on stderr, and
// under "approval" with --output json — never print the output as though
// the tool ran with the arguments the script sent.
func TestCallRetryOfAnAmendedCallSaysTheArgumentsChanged(t *testing.T) {
	w := newApprovalWorld(t)
	env := map[string]string{"CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	call := []string{"call", "demo", "issue_refund",
		"--args", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		"--intent", `{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`,
		"--request-id", "req-cli-amended-retry-1"}
	so, se, code := w.run(env, call...)
	id := strings.TrimSpace(so)
	if code != cli.ExitPending || !strings.HasPrefix(id, "ar-") {
		t.Fatalf("call: exit %d\n%s\n%s", code, so, se)
	}
	if so, se, code := w.run(adminEnv(), "approval", "approve", id, "--key", w.key("cfo"),
		"--amend", `{"customer_id":"cust-1","amount":200,"currency":"USD"}`, "--note", "partial"); code != 0 {
		t.Fatalf("approve: exit %d\n%s\n%s", code, so, se)
	}

	so, se, code = w.run(env, call...)
	if code != cli.ExitOK || !strings.Contains(so, `"amount":200`) {
		t.Fatalf("retry: exit %d\n%s\n%s", code, so, se)
	}
	if !strings.Contains(se, `amended arguments: {"amount":200`) || !strings.Contains(se, "note: partial") {
		t.Fatalf("retry printed the amended call's output without saying the approver changed its arguments:\nstdout %q\nstderr %q", so, se)
	}

	so, se, code = w.run(env, append(call, "--output", "json")...)
	var st struct {
		Status   string `json:"status"`
		Approval *struct {
			Amended          bool            `json:"amended"`
			AmendedArguments json.RawMessage `json:"amended_arguments"`
		} `json:"approval"`
	}
	if code != cli.ExitOK || json.Unmarshal([]byte(so), &st) != nil || st.Status != "allowed" {
		t.Fatalf("retry json: exit %d\n%s\n%s", code, so, se)
	}
	var amended struct{ Amount float64 }
	if st.Approval == nil || !st.Approval.Amended || json.Unmarshal(st.Approval.AmendedArguments, &amended) != nil || amended.Amount != 200 {
		t.Fatalf("retry json lacks the approval's amendment:\n%s", so)
	}
}
