package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

func quickstartPolicy() string {
	return filepath.Join("..", "..", "examples", "policies", "quickstart.toml")
}

type explained struct {
	Grant  string `json:"grant"`
	Guards []struct {
		Guard           string `json:"guard"`
		ApprovalTrigger bool   `json:"approval_trigger"`
		Verdict         string `json:"verdict"`
		Reason          string `json:"reason"`
		RoutedToHuman   bool   `json:"routed_to_human"`
	} `json:"guards"`
	Outcome struct {
		Verdict     string   `json:"verdict"`
		Guard       string   `json:"guard"`
		Reason      string   `json:"reason"`
		TriggeredBy []string `json:"triggered_by"`
		DecidedBy   []string `json:"decided_by"`
	} `json:"outcome"`
	Approval *struct {
		Approvers []string `json:"approvers"`
		Quorum    int      `json:"quorum"`
	} `json:"approval"`
}

func explain(t *testing.T, policyFile string, args ...string) *explained {
	t.Helper()
	so, se, code := chio(nil, append([]string{"policy", "explain", policyFile, "--output", "json"}, args...)...)
	var x explained
	if code != cli.ExitOK || json.Unmarshal([]byte(so), &x) != nil {
		t.Fatalf("explain %q: exit %d\n%s\n%s", args, code, so, se)
	}
	return &x
}

func TestPolicyExplain(t *testing.T) {
	refund := []string{"--server", "demo", "--tool", "issue_refund",
		"--args", `{"customer_id":"cust-9012","amount":450,"currency":"USD"}`,
		"--intent", `{"purpose":"Refund order #8834","max_amount":{"units":450,"currency":"USD"}}`}
	x := explain(t, quickstartPolicy(), refund...)
	// Every guard of the kernel's pipeline, in its order: a guard added to
	// kernel.BuiltinGuards shows up here without a change to chio.
	builtin := kernel.BuiltinGuards()
	if len(x.Guards) != len(builtin) {
		t.Fatalf("%d guards explained, the kernel runs %d", len(x.Guards), len(builtin))
	}
	for i, g := range builtin {
		if x.Guards[i].Guard != g.Name() || x.Guards[i].ApprovalTrigger != g.Approval() {
			t.Fatalf("guard %d: %+v, want %s", i, x.Guards[i], g.Name())
		}
	}
	pendingRows := 0
	for _, g := range x.Guards {
		switch {
		case g.Guard == kernel.GuardApprovalAbove:
			if g.Verdict != "pending_approval" || !strings.Contains(g.Reason, "450 USD meets the approval threshold of 200") {
				t.Fatalf("threshold row: %+v", g)
			}
			pendingRows++
		case g.Verdict != "allow":
			t.Fatalf("row %+v", g)
		}
	}
	if pendingRows != 1 || x.Grant != "refunds" || x.Outcome.Verdict != "pending_approval" ||
		strings.Join(x.Outcome.DecidedBy, ";") != "grant refunds;trigger require_approval_above" ||
		x.Approval == nil || strings.Join(x.Approval.Approvers, ",") != "Finance Lead,CFO" || x.Approval.Quorum != 1 {
		t.Fatalf("refund: %+v %+v", x.Outcome, x.Approval)
	}

	// A deny names the grant and the guard that decided.
	x = explain(t, quickstartPolicy(), "--server", "demo", "--tool", "delete_file", "--args", `{"path":"/etc/passwd"}`, "--grant", "files")
	if x.Outcome.Verdict != "deny" || x.Outcome.Guard != kernel.GuardForbiddenPaths || strings.Join(x.Outcome.DecidedBy, ";") != "grant files;guard forbidden_paths" {
		t.Fatalf("delete: %+v", x.Outcome)
	}
	// No grant of the capability covers the call: only the scope guard runs.
	x = explain(t, quickstartPolicy(), "--server", "demo", "--tool", "delete_file", "--args", `{"path":"/tmp/a"}`, "--grant", "echo")
	if x.Grant != "" || x.Outcome.Guard != kernel.GuardScope || x.Guards[0].Verdict != "deny" || x.Guards[1].Verdict != "not_run" {
		t.Fatalf("no grant: %+v %+v", x.Outcome, x.Guards)
	}
	// confirm asks a human once the guards allow, as the kernel does.
	x = explain(t, quickstartPolicy(), "--server", "demo", "--tool", "confirm", "--args", `{"prompt":"Ship it?"}`)
	if x.Outcome.Verdict != "pending_approval" || strings.Join(x.Outcome.TriggeredBy, ",") != "hitl" {
		t.Fatalf("confirm: %+v", x.Outcome)
	}
	// The table says the same to a person.
	so, _, code := chio(nil, append([]string{"policy", "explain", quickstartPolicy()}, refund...)...)
	for _, want := range []string{"grant:    refunds", "require_approval_above        approval trigger  pending_approval  amount 450 USD",
		"outcome:  pending_approval", "decided:  grant refunds; trigger require_approval_above", "asks:     Finance Lead, CFO (quorum 1)",
		// The kernel denies a call that would park one request more than
		// the agent may have waiting: explain says it assumes there is room.
		"assumes:  the agent has fewer than 100 approval requests waiting"} {
		if code != 0 || !strings.Contains(so, want) {
			t.Errorf("table lacks %q:\n%s", want, so)
		}
	}
}

// on_trigger routes a guard's deny to a human: explain shows both.
func TestPolicyExplainOnTrigger(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "chio.toml")
	os.WriteFile(pol, []byte(`
[[servers]]
id = "fs"
transport = "builtin"
[[grants]]
id = "files"
server = "fs"
tool = "delete_file"
[grants.constraints]
forbidden_paths = ["/etc/**"]
on_trigger = { forbidden_paths = "require_approval" }
[grants.approval]
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "Finance Lead"
`), 0o600)
	x := explain(t, pol, "--server", "fs", "--tool", "delete_file", "--args", `{"path":"/etc/hosts"}`)
	var row = x.Guards[0]
	for _, g := range x.Guards {
		if g.Guard == kernel.GuardForbiddenPaths {
			row = g
		}
	}
	if row.Guard != kernel.GuardForbiddenPaths || !row.RoutedToHuman || row.Verdict != "pending_approval" ||
		x.Outcome.Verdict != "pending_approval" || strings.Join(x.Outcome.TriggeredBy, ",") != kernel.GuardForbiddenPaths {
		t.Fatalf("%+v %+v", row, x.Outcome)
	}
}

func TestPolicyExplainMistakes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[[grants]]\nid = 3\n"), 0o600)
	for name, c := range map[string]struct {
		args []string
		code int
		err  string
	}{
		"no server":       {[]string{quickstartPolicy(), "--tool", "echo"}, cli.ExitUsage, "--server and --tool are required"},
		"no file":         {[]string{"--server", "demo", "--tool", "echo"}, cli.ExitUsage, "missing FILE"},
		"unknown grant":   {[]string{quickstartPolicy(), "--server", "demo", "--tool", "echo", "--grant", "nope"}, cli.ExitUsage, `grant "nope" is not in`},
		"args not object": {[]string{quickstartPolicy(), "--server", "demo", "--tool", "echo", "--args", "[1]"}, cli.ExitUsage, "arguments must be a JSON object"},
		"bad intent":      {[]string{quickstartPolicy(), "--server", "demo", "--tool", "echo", "--intent", `{"purpose":1}`}, cli.ExitUsage, "governed_intent"},
		"weak subject":    {[]string{quickstartPolicy(), "--server", "demo", "--tool", "echo", "--subject", "ed25519:0100000000000000000000000000000000000000000000000000000000000000"}, cli.ExitUsage, "--subject"},
		"invalid policy":  {[]string{bad, "--server", "demo", "--tool", "echo"}, cli.ExitError, "bad.toml:2"},
		"missing policy":  {[]string{"nope.toml", "--server", "demo", "--tool", "echo"}, cli.ExitError, "nope.toml"},
	} {
		t.Run(name, func(t *testing.T) {
			so, se, code := chio(nil, append([]string{"policy", "explain"}, c.args...)...)
			if code != c.code || so != "" || !strings.Contains(se, c.err) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, so, se)
			}
		})
	}
}
