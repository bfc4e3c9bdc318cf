package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardRefusesABlankTypedAnswerBeforeSigning: chiod refuses a
// typed answer that shows as nothing (approval.Blank: white space,
// controls and invisible characters), and the kernel's own test says the
// dashboard's form refuses it first ("Please answer"). It refused only
// what JavaScript's trim() removes: a zero-width space and a blank Braille
// cell in a text answer were signed and sent, and the approver was told
// no by chiod after signing. And an invisible character left under Other,
// beside a ticked choice, made the form refuse the choice shown as the
// only answer. What shows as nothing is no answer: refused, or left out,
// before anything is signed.
func TestDashboardRefusesABlankTypedAnswerBeforeSigning(t *testing.T) {
	p := openAskPage(t, `{"prompt":"New project","questions":[`+
		`{"id":"name","text":"Project name?","type":"text"},`+
		`{"id":"acct","text":"Bill which account?","type":"single","options":["acct-1","acct-2"],"allow_other":true}]}`)
	lk, out, ctx, sel, sent := p.lk, p.out, p.ctx, p.sel, p.sent
	setValue := func(field, v string) chromedp.Action[chromedp.Void] {
		return chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + ` ` + field + `').value = '` + v + `'`)
	}
	browse(t, ctx, "answer with invisible characters",
		setValue(".answer-text", `\u200B\u2800 `),
		press(sel+` input[value="acct-1"]`),
		press(sel+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(sel+" .card-error")))
	msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
	if n := sent.Load(); n != 0 || !strings.Contains(msg, "Project name?") {
		t.Fatalf("a text answer of a zero-width space and a blank Braille cell: sent %d time(s), the card says %q; want it refused by the form, naming the question", n, msg)
	}
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "answer, a zero-width space left under Other",
		setValue(".answer-text", "Apollo"),
		setValue(".answer-other", `\u200B`),
		press(sel+` button[data-action="approve"]`))
	if st := ranWithin(waiter, 20*time.Second); st == nil || !strings.Contains(string(st.Output), `"acct":"acct-1"`) {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('`+sel+` .card-error') || {}).textContent || ''`))
		t.Fatalf("acct-1 ticked, Other showing nothing: the call %+v; the card says %q", st, msg)
	}
}
