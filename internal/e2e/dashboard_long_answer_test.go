package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRefusesATooLongAnswerBeforeSigning: chiod takes a typed
// answer of at most 4000 bytes of UTF-8 (approval.MaxAnswerText). The
// form took any length, signed it and sent it, and chiod refused the
// signed token: 2001 "é" (4002 bytes, 2001 characters) in a text answer
// were refused only after the approver signed. The form refuses it first,
// as it does a note over 2000 bytes, saying how long it is.
func TestDashboardRefusesATooLongAnswerBeforeSigning(t *testing.T) {
	p := openAskPage(t, `{"prompt":"Release notes","questions":[`+
		`{"id":"notes","text":"What changed?","type":"text"},`+
		`{"id":"acct","text":"Bill which account?","type":"single","options":["acct-1","acct-2"],"allow_other":true}]}`)
	ctx, sel, sent := p.ctx, p.sel, p.sent
	long, short := `'é'.repeat(2001)`, `'short'`
	for _, c := range []struct{ what, text, other string }{{"a text answer", long, short}, {"an Other answer", short, long}} {
		browse(t, ctx, c.what,
			chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` .card-error').hidden = true`),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` .answer-text').value = `+c.text),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` .answer-other').value = `+c.other),
			press(sel+` button[data-action="approve"]`),
			chromedp.WaitVisible(css(sel+" .card-error")))
		msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
		if n := sent.Load(); n != 0 || !strings.Contains(msg, "4002 bytes") {
			t.Fatalf("%s of 2001 é (4002 bytes): sent %d time(s), the card says %q; want it refused by the form, saying how long it is", c.what, n, msg)
		}
	}
}
