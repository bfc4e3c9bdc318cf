package email

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// A tool's name is the agent's choice under a glob grant ("pay_*"), and
// the naming rule admits combining marks and right-to-left letters. Slack
// escapes it (codeSpan) and the CLI prints it shown; the email put it in
// both parts as it is: a stacked run of marks drew as one character or
// none, and "pay_שלום_12_34" with no note or stored order.
func TestEmailShowsToolNameAsTheOtherViews(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		ToolServer: "pay", ToolName: "refund" + strings.Repeat("\u0301", 6) + "_שלום_12_34", Summary: "refund"}
	v := newView(req, now)
	var text, html bytes.Buffer
	if err := textTmpl.Execute(&text, v); err != nil {
		t.Fatal(err)
	}
	if err := htmlTmpl.Execute(&html, v); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "\u0301\u0301") || strings.Contains(html.String(), "\u0301\u0301") {
		t.Errorf("the tool's name is shown with a stacked run of combining marks:\n%s", text.String())
	}
	if !strings.Contains(text.String(), `refund\u0301\u0301`) || !strings.Contains(text.String(), "_34  (contains right-to-left text") {
		t.Errorf("the plain-text part does not show the tool's name escaped, with the stored-order note:\n%s", text.String())
	}
	if !strings.Contains(html.String(), `<code><bdo dir="ltr"`) {
		t.Errorf("the HTML part does not draw the tool's name in stored order:\n%s", html.String())
	}
}
