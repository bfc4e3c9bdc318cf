package kernel_test

import (
	"context"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// governed_intent_required was met by an intent without a purpose ("{}" or
// a blank one), which SPEC §3 makes the required member.
func TestIntentRequiredNeedsAPurpose(t *testing.T) {
	w := echoWorld(t, `governed_intent_required = true`)
	for _, intent := range []string{`{}`, `{"purpose":""}`, `{"purpose":"  "}`} {
		out, err := w.Kernel.Submit(context.Background(), w.Call(t, "echo", `{"msg":"hi"}`, intent))
		if err != nil {
			continue // refused as a malformed intent: also fine
		}
		if out.Status != kernel.StatusDenied || out.Guard != "governed_intent_required" {
			t.Errorf("governed_intent = %s satisfied governed_intent_required: %s (%s)", intent, out.Status, out.Guard)
		}
	}
	if out := w.Submit(t, "echo", `{"msg":"hi"}`, `{"purpose":"say hi"}`); out.Status != kernel.StatusAllowed {
		t.Fatalf("an intent with a purpose: %s (%s)", out.Status, out.Reason)
	}
}
