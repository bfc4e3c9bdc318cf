package email

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// Combining marks pile on the character before them: three hundred of
// them draw as one character, and the same accent twice draws as once.
// The dashboard writes such a run (more than four marks, or the same mark
// twice in a row) as \uXXXX escapes; the email wrote the summary and the
// purpose raw, and put such a summary in the subject line.
func TestEmailEscapesStackedCombiningMarks(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	pile := strings.Repeat("\u0301", 300)
	nguyen := "Nguye\u0302\u0303n" // a letter with two different marks: text
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		ToolServer: "pay", ToolName: "issue_refund",
		Summary:        "Refund to acct-1" + pile + " for 450 USD",
		Amount:         &approval.Amount{Units: 450, Currency: "USD"},
		GovernedIntent: json.RawMessage(`{"purpose":"order 8834 re\u0301\u0301f ` + nguyen + `","max_amount":{"units":450,"currency":"USD"}}`)}
	v := newView(req, now)
	for what, s := range map[string]string{"summary": v.Summary, "purpose": v.Purpose, "subject": subject(v)} {
		if strings.Contains(s, "\u0301\u0301") {
			t.Errorf("the %s holds a stacked run of combining marks, drawn as one character or none: %.120q", what, s)
		}
	}
	if !strings.HasPrefix(v.Summary, `Refund to acct-1\u0301\u0301`) || !strings.Contains(v.Purpose, `re\u0301\u0301f `+nguyen) {
		t.Errorf("the runs are not shown as escapes (or a letter with two marks is): %.80q / %q", v.Summary, v.Purpose)
	}
}
