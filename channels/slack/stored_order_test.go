package slack_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/textdir"
)

// texts collects every string in a decoded Slack payload.
func texts(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, texts(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, texts(e)...)
		}
		return out
	}
	return nil
}

// Slack applies the Unicode Bidirectional Algorithm (and detects a
// paragraph's direction from its first letter): an argument or purpose
// "שלום 1234 5678" is drawn "5678 1234 םולש", the digit groups swapped,
// with no control character at all. Slack offers no markup to force an
// order, so right-to-left letters are written as \uXXXX escapes, as
// invisible characters are: a message holding no right-to-left character
// cannot be reordered. The message says so; a private-use character is
// escaped too.
func TestRightToLeftTextIsWrittenInStoredOrder(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"שלום 1234 5678","amount":300,"currency":"USD","tag":"x\ue000y","ref":"٣٣٣٣ ٤٤٤٤"}`,
		`{"purpose":"העברה 4321 8765","max_amount":{"units":450,"currency":"USD"}}`)
	v := w.posted(t, out.ApprovalRequestID)
	var all []string
	for _, b := range blocks(t, v) {
		all = append(all, texts(b)...)
	}
	msg := strings.Join(append(all, v.Get("text")), "\n")
	if textdir.HasRTL(msg) || strings.ContainsRune(msg, '\ue000') {
		t.Errorf("the message holds right-to-left or private-use characters Slack would reorder or draw as anything:\n%s", msg)
	}
	for _, want := range []string{
		`"customer_id":"\u05E9\u05DC\u05D5\u05DD 1234 5678"`, `"tag":"x\uE000y"`, `"ref":"\u0663\u0663\u0663\u0663 \u0664\u0664\u0664\u0664"`, `\u05D4\u05E2\u05D1\u05E8\u05D4 4321 8765`,
		"Right-to-left text is written as \\uXXXX escapes",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not show %s:\n%s", want, msg)
		}
	}
}
