package slack_test

import (
	"strings"
	"testing"
)

// fieldsText joins the texts of a message's field section.
func fieldsText(t *testing.T, b []map[string]any) string {
	t.Helper()
	var fields []string
	for _, f := range b[1]["fields"].([]any) {
		fields = append(fields, f.(map[string]any)["text"].(string))
	}
	return strings.Join(fields, "\n")
}

// The Amount is what the arguments move (the kernel's derived amount), not
// the agent's max_amount envelope.
func TestAmountIsWhatTheArgumentsMove(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":300,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	if req := w.approval(t, out.ApprovalRequestID); req.Amount == nil || req.Amount.Units != 300 {
		t.Fatalf("derived amount: %+v", req.Amount)
	}
	all := fieldsText(t, blocks(t, w.posted(t, out.ApprovalRequestID)))
	if !strings.Contains(all, "*Amount*\n300 USD") || strings.Contains(all, "450") {
		t.Fatalf("the Amount field is not the amount the tool will move (300 USD):\n%s", all)
	}
}

// For a tool that declares no amount, the agent's max_amount is only its
// word, and the message says so (as the dashboard and the summary do).
func TestAmountDeclaredByTheAgentIsMarked(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "echo", `{"transfer":{"amount":250000,"currency":"USD"}}`,
		`{"purpose":"small test transfer","max_amount":{"units":5,"currency":"USD"}}`)
	all := fieldsText(t, blocks(t, w.posted(t, out.ApprovalRequestID)))
	if !strings.Contains(all, "*Amount*\nup to 5 USD (declared by the agent)") {
		t.Fatalf("the agent's unverified max_amount is not marked as such:\n%s", all)
	}
}

// Format characters in what the message shows (here a bidi override in an
// exposed argument, which the kernel must pass to the tool as sent) are
// drawn as visible escapes: a raw U+202E would draw the IBAN right to left,
// so the approver would read it reversed.
func TestFormatCharactersShownAsEscapes(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":300,"currency":"USD","iban":"\u202eDE89 3704 0044"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	msg := w.posted(t, out.ApprovalRequestID).Get("blocks")
	if strings.Contains(msg, "\u202e") || !strings.Contains(msg, `\\u202E`) {
		t.Fatalf("the message draws the override raw, or not as an escape:\n%s", msg)
	}
}

// Characters that draw nothing or only a blank without being format
// characters (a combining grapheme joiner, variation selectors, a Hangul
// filler, the braille blank) are drawn as visible escapes too: raw, the
// IBAN "DE89<filler> 3704" reads as "DE89 3704".
func TestInvisibleCharactersOutsideCfShownAsEscapes(t *testing.T) {
	const hidden = "\u034f\ufe00\ufe0f\U000E0100\u3164\u2800"
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":300,"currency":"USD","iban":"DE89`+hidden+` 3704"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	msg := w.posted(t, out.ApprovalRequestID).Get("blocks")
	if strings.ContainsAny(msg, hidden) || !strings.Contains(msg, `DE89\\u034F\\uFE00\\uFE0F\\uDB40\\uDD00\\u3164\\u2800 3704`) {
		t.Fatalf("the message draws invisible characters raw, or not as escapes:\n%s", msg)
	}
}
