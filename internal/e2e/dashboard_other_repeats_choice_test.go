package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardRefusesAnOtherAnswerRepeatingATickedChoiceBeforeSigning: in
// a multiple-choice question, ticking "unit" and typing "unit" under
// Other gave the answer ["unit","unit"], which chiod refuses (a tool
// acting once per pick would act twice on one choice). The page signed
// it and sent it, and only then told the approver no, in chiod's words:
// the approver had signed a decision they never meant. The form refuses
// it itself, saying why, with nothing signed or sent.
func TestDashboardRefusesAnOtherAnswerRepeatingATickedChoiceBeforeSigning(t *testing.T) {
	p := openAskPage(t, `{"prompt":"Which checks?","questions":[`+
		`{"id":"checks","text":"Which checks ran?","type":"multi","options":["unit","e2e"],"allow_other":true}]}`)
	lk, out, ctx, sel, sent := p.lk, p.out, p.ctx, p.sel, p.sent
	browse(t, ctx, "answer unit twice",
		press(sel+` input[value="unit"]`),
		chromedp.SetValue(css(sel+" .answer-other"), " unit "),
		press(sel+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(sel+" .card-error")))
	msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
	if n := sent.Load(); n != 0 {
		t.Fatalf("an Other answer repeating a ticked choice was signed and sent %d time(s); the card then says %q", n, msg)
	}
	if !strings.Contains(msg, "unit") || !strings.Contains(msg, "Other") {
		t.Fatalf("the card refuses the repeated answer saying %q; want the choice named and Other", msg)
	}
	// Untyped, the answer goes through.
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "answer once",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+sel+` .answer-other').value = ''`),
		press(sel+` button[data-action="approve"]`))
	if st := ranWithin(waiter, 20*time.Second); st == nil || !strings.Contains(string(st.Output), `"checks":["unit"]`) {
		t.Fatalf("the answer unit alone: the call %+v", st)
	}
}
