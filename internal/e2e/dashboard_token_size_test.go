package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestDashboardRefusesATokenTooLargeBeforeSigning: chiod takes a token of
// at most 64 KiB (approval.MaxTokenBytes). Each typed answer of a question
// form may hold 4000 bytes (approval.MaxAnswerText), and the form checks
// each, but not what they make together: seventeen text answers of 4000
// bytes, each one the form and chiod take, made a token of over 68000
// bytes that the form signed and sent, only for chiod to refuse it. The
// form refuses it first, before anything is signed, saying how large it is.
func TestDashboardRefusesATokenTooLargeBeforeSigning(t *testing.T) {
	var qs []string
	for i := range 17 {
		qs = append(qs, fmt.Sprintf(`{"id":"q%d","text":"Part %d?","type":"text"}`, i, i))
	}
	p := openAskPage(t, `{"prompt":"Long report","questions":[`+strings.Join(qs, ",")+`]}`)
	ctx, sel, sent := p.ctx, p.sel, p.sent
	browse(t, ctx, "answer every question with 4000 bytes",
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('`+sel+` .answer-text').forEach((t) => { t.value = 'a'.repeat(4000); })`),
		press(sel+` button[data-action="approve"]`),
		chromedp.WaitVisible(css(sel+" .card-error")))
	msg := read(t, ctx, "card error", chromedp.Text(css(sel+" .card-error")))
	if n := sent.Load(); n != 0 || !strings.Contains(msg, "65536") || !strings.Contains(msg, "Nothing was signed") {
		t.Fatalf("17 answers of 4000 bytes: sent %d time(s), the card says %q; want the form to refuse the token over chio's 65536 bytes before signing it", n, msg)
	}
}
