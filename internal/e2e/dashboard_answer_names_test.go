package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// TestDashboardAnswersEveryQuestionID: a question's id becomes a member
// name of the signed answers, and the kernel accepts any id that reads as
// a name, "__proto__" among them. The page gathered the answers in a
// plain object, where answers["__proto__"] = … sets the object's prototype
// instead of a member: the answer the approver gave was silently left out
// of what was signed, and the kernel refused the token ("0 answers for 1
// questions"), so such a question could never be answered.
func TestDashboardAnswersEveryQuestionID(t *testing.T) {
	lk, open := dashboardAsLead(t)
	out := lk.submit(t, "ask", "ask", `{"prompt":"Which carrier?","questions":[`+
		`{"id":"__proto__","text":"Carrier","type":"single","options":["UPS","DHL"]},`+
		`{"id":"constructor","text":"Services","type":"multi","options":["insured","tracked"]}]}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ask: %+v", out)
	}
	ctx := open()
	sel := card(out.ApprovalRequestID)
	waiter := lk.awaitCall(t, out.RequestID)
	browse(t, ctx, "answer", chromedp.WaitVisible(css(sel)), press(sel+` input[value="DHL"]`), press(sel+` input[value="tracked"]`),
		press(sel+` button[data-action="approve"]`))
	st := ranWithin(waiter, 20*time.Second)
	if st == nil || !strings.Contains(string(st.Output), `"answers":{"__proto__":"DHL","constructor":["tracked"]}`) {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('`+sel+` .card-error') || {}).textContent || ''`))
		t.Fatalf("the answers given were DHL and [tracked]; the call: %+v; the card says %q", st, msg)
	}
}
