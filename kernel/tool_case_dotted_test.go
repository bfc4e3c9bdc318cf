package kernel_test

import (
	"fmt"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Case folding (strings.EqualFold) is not how every tool server compares
// names: Go's strings.ToLower maps "İ" (U+0130) to "i", and ToUpper in Go,
// Python and JavaScript maps "ı" (U+0131) to "I", though neither folds to
// i. A server that lower- or upper-cases the name it receives runs
// issue_refund for "İssue_refund" or "ıssue_refund"; the kernel found no
// declared tool in another case and let the catch-all grant allow it,
// the refund's own grant (and its human) passed by. Such names are
// refused as the other spellings of a declared tool are.
func TestToolNamedLikeADeclaredToolByCaseMappingIsRefused(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-approver-approver-32byt"))
	disp := &fakeDispatcher{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(toolCasePolicy, approver.Public()), Dispatcher: disp,
		Server: "pay", Grants: []string{"refunds", "pay-other"}})
	args := `{"customer_id":"c","amount":45000,"currency":"USD"}`
	for _, name := range []string{"İssue_refund", "ıssue_refund", "ıSSUE_REFUND"} {
		out := w.Submit(t, name, args, "")
		if n := disp.count(out.RequestID); n != 0 || out.Status != kernel.StatusDenied || out.Guard != kernel.GuardScope {
			t.Fatalf("%s: %s by %q (%s), %d dispatches; want denied by %s", name, out.Status, out.Guard, out.Reason, n, kernel.GuardScope)
		}
	}
}
