package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// schemaPolicy: an http payment tool whose arguments the platform team
// declares (input_schema); transfers above 100 USD ask a human who may
// amend them.
const schemaPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "https://pay.example.com/chio"

[[servers.tools]]
name = "transfer"
amount = "/amount"
currency = "/currency"
input_schema = '''
{"type": "object",
 "properties": {"amount": {"type": "integer", "minimum": 1},
                "currency": {"type": "string", "enum": ["USD"]},
                "to": {"type": "string", "pattern": "^acct-[0-9]+$"}},
 "required": ["amount", "currency", "to"],
 "additionalProperties": false}
'''

[[grants]]
id = "pay"
server = "pay"
tool = "transfer"
[grants.constraints]
require_approval_above = { threshold_units = 100, currency = "USD" }
[grants.approval]
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Treasurer"
`

// payIntent covers every transfer below (require_approval_above needs one).
const payIntent = `{"purpose":"pay a supplier","max_amount":{"units":1000,"currency":"USD"}}`

type schemaWorld struct {
	*testkit.World
	disp     *fakeDispatcher
	clock    *clock.Fake
	approver keys.PrivateKey
	text     string
}

func newSchemaWorld(t *testing.T) *schemaWorld {
	t.Helper()
	w := &schemaWorld{disp: &fakeDispatcher{}, clock: clock.NewFake(time.Unix(1_800_000_000, 0))}
	w.approver, _ = keys.Generate(nil)
	w.text = fmt.Sprintf(schemaPolicy, w.approver.Public())
	w.World = testkit.NewWorld(t, testkit.Options{PolicyTOML: w.text, Clock: w.clock, Dispatcher: w.disp,
		Server: "pay", Grants: []string{"pay"}})
	return w
}

// A call to an http tool whose arguments break the tool's declared
// input_schema is denied by the kernel's input_schema guard, with a
// receipt, and never reaches the tool: whatever front door it came
// through (POST /v1/calls and /mcp both Submit).
func TestCallViolatingTheDeclaredInputSchemaIsDenied(t *testing.T) {
	w := newSchemaWorld(t)
	for _, args := range []string{
		`{"amount":"5","currency":"USD","to":"acct-1"}`,
		`{"amount":5,"currency":"USD"}`,
		`{"amount":5,"currency":"USD","to":"acct-1","memo":"extra"}`,
		`{"amount":5,"currency":"USD","to":"../admin"}`,
	} {
		out := w.Submit(t, "transfer", args, payIntent)
		if out.Status != kernel.StatusDenied || out.Guard != "input_schema" ||
			!strings.Contains(out.Reason, "arguments do not match the tool's inputSchema") {
			t.Fatalf("%s: %+v; want denied by %s", args, out, "input_schema")
		}
		if n := w.disp.count(out.RequestID); n != 0 {
			t.Fatalf("%s: dispatched %d times", args, n)
		}
		if rc := w.Receipt(t, out.ReceiptID); rc.Decision.Verdict != receipt.Deny || rc.Decision.Guard != "input_schema" {
			t.Fatalf("%s: receipt %+v", args, rc.Decision)
		}
	}
	out := w.Submit(t, "transfer", `{"amount":5,"currency":"USD","to":"acct-1"}`, payIntent)
	if out.Status != kernel.StatusAllowed || w.disp.count(out.RequestID) != 1 {
		t.Fatalf("valid call: %+v", out)
	}
}

// An approver's amendment is held to the declared schema: one that breaks
// it is refused when the token is presented, nothing is consumed or
// dispatched, and the request can still be decided.
func TestAmendmentViolatingTheDeclaredInputSchemaIsRefused(t *testing.T) {
	w := newSchemaWorld(t)
	out := w.Submit(t, "transfer", `{"amount":500,"currency":"USD","to":"acct-1"}`, payIntent)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v", out)
	}
	ctx := context.Background()
	for _, amended := range []string{
		`{"amount":50,"currency":"USD","to":"acct-1","note":"x"}`,
		`{"amount":50,"currency":"USD","to":"somewhere else"}`,
		`{"amount":50,"currency":"USD"}`,
	} {
		tok := w.Token(t, out.ApprovalRequestID, w.approver, approval.DecisionApproved, func(tk *approval.Token) {
			tk.AmendedArguments = json.RawMessage(amended)
		})
		_, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
		if !errors.Is(err, approval.ErrAmendmentRefused) || !strings.Contains(err.Error(), "input schema") {
			t.Fatalf("amendment %s: err = %v; want refused", amended, err)
		}
		if n := w.disp.count(out.RequestID); n != 0 {
			t.Fatalf("amendment %s dispatched", amended)
		}
	}
	tok := w.Token(t, out.ApprovalRequestID, w.approver, approval.DecisionApproved, func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"amount":50,"currency":"USD","to":"acct-1"}`)
	})
	if _, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", ""); err != nil {
		t.Fatalf("a valid amendment: %v", err)
	}
	eventually(t, "the amended call to run", func() bool { return w.disp.count(out.RequestID) == 1 })
}

// A reload changes the schema calls are held to.
func TestReloadChangesTheDeclaredInputSchema(t *testing.T) {
	w := newSchemaWorld(t)
	args := `{"amount":5,"currency":"USD","to":"acct-1","memo":"rent"}`
	if out := w.Submit(t, "transfer", args, payIntent); out.Status != kernel.StatusDenied {
		t.Fatalf("before the reload: %+v", out)
	}
	loose := strings.Replace(w.text, `"additionalProperties": false`, `"additionalProperties": true`, 1)
	p, err := policy.Parse([]byte(loose), "loose.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if out := w.Submit(t, "transfer", args, payIntent); out.Status != kernel.StatusAllowed {
		t.Fatalf("after the reload: %+v", out)
	}
}
