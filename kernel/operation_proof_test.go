package kernel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// The call proof does not cover `operation` (SPEC §3; ARCHITECTURE.md,
// Deviations). This pins exactly what someone who alters a signed call in
// transit can do with it, so that the documented impact stays true: pick,
// among the grants the capability already holds for this server and tool,
// one that lists another operation (here: skip the approval the signed
// call would have been parked for), and set the action verb of a tool the
// policy does not declare. The server, tool, arguments and intent stay
// bound by the proof, and an operation no held grant lists is denied.
func TestOperationOutsideTheProof(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "careful"
server = "demo"
tool = "*"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "A"

[[grants]]
id = "preview"
server = "demo"
tool = "*"
operations = ["preview"]
`, approver.Public()), Dispatcher: disp, Grants: []string{"careful", "preview"}})
	ctx := context.Background()
	args := `{"customer_id":"c","amount":450,"currency":"USD"}`

	signed := w.Call(t, "issue_refund", args, "") // signed as "invoke" (the default)
	if out := w.SubmitCall(t, signed); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("as signed: %s, want pending", out.Status)
	}

	// The same signature with the operation changed: judged under the
	// other held grant, and run without approval.
	altered := w.Call(t, "issue_refund", args, "")
	altered.Operation = "preview"
	out := w.SubmitCall(t, altered)
	rec, err := w.Kernel.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != kernel.StatusAllowed || rec.GrantID != "preview" || disp.count(out.RequestID) != 1 {
		t.Fatalf("altered operation: %s under %q, %d dispatches", out.Status, rec.GrantID, disp.count(out.RequestID))
	}
	// A declared tool's action verb is the policy's; an undeclared tool's
	// is the (unsigned) operation.
	if rec.Action != "charge" {
		t.Fatalf("declared tool's action %q", rec.Action)
	}
	undeclared := w.Call(t, "not_declared", `{}`, "")
	undeclared.Operation = "preview"
	if rec, _ := w.Kernel.Call(w.SubmitCall(t, undeclared).RequestID); rec.Action != "preview" {
		t.Fatalf("undeclared tool's action %q, want the operation", rec.Action)
	}

	// No held grant lists the operation: denied, nothing runs.
	other := w.Call(t, "issue_refund", args, "")
	other.Operation = "admin"
	if out := w.SubmitCall(t, other); out.Status != kernel.StatusDenied || out.Guard != kernel.GuardScope {
		t.Fatalf("unlisted operation: %s by %q", out.Status, out.Guard)
	}
	// What the proof covers cannot be changed along with it.
	tampered := w.Call(t, "issue_refund", args, "")
	tampered.Operation, tampered.Tool = "preview", "delete_file"
	if _, err := w.Kernel.Submit(ctx, tampered); err == nil {
		t.Fatal("a call whose tool changed after signing was accepted")
	}
}
