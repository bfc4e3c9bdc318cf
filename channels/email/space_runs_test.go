package email

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// The plain-text part lists the request one field a line, each indented
// ("  Amount:    450 USD"), and a mail client wraps a long line where its
// window ends. A summary or purpose holding a run of spaces (chiod allows
// them in prose; a control character is drawn as a space, so a run of
// line breaks makes one too) drew a blank that ended the line and the text
// after it at the start of the next, indented as the message's own lines:
// "  Amount:    1 USD" under the real fields. In a run, every space after
// the first is written as an escape, as the CLI, Slack and the dashboard
// write them.
func TestEmailMarksRunsOfSpaces(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	run := strings.Repeat(" ", 120)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		Summary:        "Agent wants to charge issue_refund on pay for 450000 USD: order 8834" + run + "  Amount:    1 USD",
		Amount:         &approval.Amount{Units: 450000, Currency: "USD"},
		GovernedIntent: json.RawMessage(`{"purpose":"order 8834\n\n\n\n  Amount:    1 USD","max_amount":{"units":450000,"currency":"USD"}}`)}
	v := newView(req, now)
	var text bytes.Buffer
	if err := textTmpl.Execute(&text, v); err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{"summary": v.Summary, "purpose": v.Purpose} {
		if strings.Contains(s, "  ") {
			t.Errorf("the %s keeps a run of spaces, which a mail client wraps into a line of its own:\n%s", what, text.String())
		}
	}
	if !strings.Contains(v.Summary, `order 8834 \u0020\u0020`) || !strings.Contains(v.Purpose, `order 8834 \u000A`) {
		t.Errorf("the runs are not shown as escapes: %q / %q", v.Summary, v.Purpose)
	}
}
