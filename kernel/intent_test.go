package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// intentJSON builds a governed intent for a 450-unit refund.
func intentJSON(t *testing.T, purpose, category string, context json.RawMessage) string {
	t.Helper()
	gi := map[string]any{"purpose": purpose, "max_amount": map[string]any{"units": 450, "currency": "USD"}}
	if category != "" {
		gi["action_category"] = category
	}
	if context != nil {
		gi["context"] = context
	}
	b, err := json.Marshal(gi)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIntentCaps: the strings approvers are shown are bounded. At the cap
// a call parks; one byte over, it is refused as malformed and changes
// nothing (no receipt, no approval request, no call record).
func TestIntentCaps(t *testing.T) {
	f := newFixture(t)
	// A context of exactly n bytes: a JSON string literal of n-2 letters.
	ctxOf := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("c", n-2) + `"`) }
	atCap := []struct{ name, intent string }{
		{"purpose", intentJSON(t, strings.Repeat("p", kernel.MaxPurposeLen), "", nil)},
		{"multi-byte purpose", intentJSON(t, strings.Repeat("é", kernel.MaxPurposeLen/2), "", nil)},
		{"action_category", intentJSON(t, "refund", strings.Repeat("a", kernel.MaxActionCategoryLen), nil)},
		{"context", intentJSON(t, "refund", "", ctxOf(kernel.MaxIntentContextBytes))},
	}
	for i, c := range atCap {
		t.Run("at cap/"+c.name, func(t *testing.T) {
			out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","n":%d}`, i), c.intent))
			if err != nil || out.Status != kernel.StatusPendingApproval {
				t.Fatalf("%v %+v", err, out)
			}
		})
	}
	seq, pending := f.state(t)

	over := []struct{ name, intent, want string }{
		{"purpose", intentJSON(t, strings.Repeat("p", kernel.MaxPurposeLen+1), "", nil), "purpose"},
		{"multi-byte purpose", intentJSON(t, strings.Repeat("é", kernel.MaxPurposeLen/2)+"x", "", nil), "purpose"},
		{"action_category", intentJSON(t, "refund", strings.Repeat("a", kernel.MaxActionCategoryLen+1), nil), "action_category"},
		{"context", intentJSON(t, "refund", "", ctxOf(kernel.MaxIntentContextBytes+1)), "context"},
		// Padding is stored and replayed as sent: the raw size counts.
		{"padded intent", `{"purpose":"refund",` + strings.Repeat(" ", kernel.MaxIntentBytes) + `"max_amount":{"units":450,"currency":"USD"}}`, "governed_intent is"},
		{"800 KiB purpose", intentJSON(t, strings.Repeat("p", 800<<10), "", nil), "governed_intent is"},
	}
	for _, c := range over {
		t.Run("over cap/"+c.name, func(t *testing.T) {
			call := f.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, c.intent)
			out, err := f.k.Submit(context.Background(), call)
			if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v %+v, want ErrBadCall naming %q", err, out, c.want)
			}
			if _, err := f.k.Call(call.RequestID); !errors.Is(err, kernel.ErrNotFound) {
				t.Fatalf("a refused call left a record: %v", err)
			}
		})
	}
	if s, p := f.state(t); s != seq || p != pending {
		t.Fatalf("refused intents changed the store: receipts %d→%d, pending %d→%d", seq, s, pending, p)
	}
}

// state is the number of receipts and of pending approval requests.
func (f *fixture) state(t *testing.T) (seq uint64, pending int) {
	t.Helper()
	err := f.store.View(func(tx kernel.ReadTx) error {
		seq = tx.LastSeq()
		return tx.PendingApprovals(func(*approval.Request) bool { pending++; return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return seq, pending
}
