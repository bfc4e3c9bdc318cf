package email

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// A request passed over its first tier (nobody there but the calling agent
// could decide) is mailed to tier 2 at once: both parts say why.
func TestPassedOverTierIsExplained(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		Tier: 1, SkippedTiers: []int{0}}
	v := newView(req, now)
	v.Escalated = true
	var text, html bytes.Buffer
	if err := textTmpl.Execute(&text, v); err != nil {
		t.Fatal(err)
	}
	if err := htmlTmpl.Execute(&html, v); err != nil {
		t.Fatal(err)
	}
	const why = "escalated at once past tier 1: nobody there but the calling agent could decide"
	if !strings.Contains(text.String(), why) || !strings.Contains(html.String(), why) {
		t.Fatalf("the mail does not say why tier 1 was passed over:\n%s\n%s", text.String(), html.String())
	}
}
