package kernel_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// The governed intent is read twice: decoded into kernel.GovernedIntent for
// the envelope guard and the approver's summary, and as a raw map for CEL
// conditions. Were member names matched case-insensitively (Unicode simple
// folding: "unitſ" (U+017F) and "UNITS" both fold to "units"), an intent
// could show CEL one envelope and have the kernel enforce another. Here the
// platform team caps the envelope at 50000 with deny_when, written
// leniently (an intent without units passes it); every spelling of a
// 9,000,000 envelope must be refused or denied, never run.
func TestIntentMemberCaseVariantsCannotSplitCELFromEnvelope(t *testing.T) {
	f := newFixture(t)
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	text := strings.Replace(fmt.Sprintf(testPolicy, approver.Public()),
		`require_approval_above = { threshold_units = 200, currency = "USD" }`,
		`deny_when = ["has(intent.max_amount) && has(intent.max_amount.units) && intent.max_amount.units > 50000"]`+
			"\nrequire_approval_when = \"args.amount > 9000000\"", 1) // the approval table's trigger, not met here
	p, err := policy.Parse([]byte(text), "fold.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	const args = `{"customer_id":"c","amount":5000000,"currency":"USD"}`

	// Control: an honest envelope over the cap, signed the same way, is
	// denied by deny_when.
	honest := &kernel.ToolCall{RequestID: "fold-honest", Capability: f.capRaw, Server: "demo", Tool: "issue_refund",
		Arguments: json.RawMessage(args), GovernedIntent: json.RawMessage(`{"purpose":"p","max_amount":{"units":9000000,"currency":"USD"}}`)}
	signLeniently(t, f, honest)
	out, err := f.k.Submit(context.Background(), honest)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != kernel.StatusDenied || out.Guard != kernel.GuardDenyWhen {
		t.Fatalf("control: status %s guard %q, want denied by deny_when", out.Status, out.Guard)
	}

	for name, intent := range map[string]string{
		"folding twin":         `{"purpose":"p","max_amount":{"units":100,"unit\u017f":9000000,"currency":"USD"}}`,
		"upper-case twin":      `{"purpose":"p","max_amount":{"units":100,"UNITS":9000000,"currency":"USD"}}`,
		"folded spelling only": `{"purpose":"p","max_amount":{"UNITS":9000000,"currency":"USD"}}`,
		"folding outer name":   `{"purpose":"p","max_amount":{"units":100,"currency":"USD"},"MAX_AMOUNT":{"units":9000000,"currency":"USD"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			call := &kernel.ToolCall{RequestID: "fold-" + strings.ReplaceAll(name, " ", "-"), Capability: f.capRaw,
				Server: "demo", Tool: "issue_refund", Arguments: json.RawMessage(args), GovernedIntent: json.RawMessage(intent)}
			signLeniently(t, f, call)
			out, err := f.k.Submit(context.Background(), call)
			if err != nil {
				return // refusing an ambiguous intent is the expected answer
			}
			if out.Status != kernel.StatusDenied || f.disp.count(call.RequestID) > 0 {
				t.Fatalf("status %s (guard %q, reason %q), dispatched %d times: a refund of 5,000,000 ran although "+
					"deny_when caps the intent envelope at 50000", out.Status, out.Guard, out.Reason, f.disp.count(call.RequestID))
			}
		})
	}
}

// signLeniently signs c's proof over a parameter hash computed with a plain
// RFC 8785 canonicalizer, as an agent not using chio's SDK could: chio's own
// canon (kernel.ParameterHash) refuses case-variant member names.
func signLeniently(t *testing.T, f *fixture, c *kernel.ToolCall) {
	t.Helper()
	jcs := func(raw json.RawMessage) []byte {
		v := jsontext.Value(append([]byte(nil), raw...))
		if err := v.Canonicalize(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	b := []byte(`{"arguments":`)
	b = append(b, jcs(c.Arguments)...)
	b = append(b, `,"governed_intent":`...)
	b = append(b, jcs(c.GovernedIntent)...)
	b = append(b, fmt.Sprintf(`,"server_id":%q,"tool_name":%q}`, c.Server, c.Tool)...)
	sum := sha256.Sum256(b)
	var err error
	if c.Proof, err = kernel.SignProof(f.agent, c.RequestID, f.cap.ID, c.Server, c.Tool, hex.EncodeToString(sum[:]), f.clock.Now()); err != nil {
		t.Fatal(err)
	}
}
