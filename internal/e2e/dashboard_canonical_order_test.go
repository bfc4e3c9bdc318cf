package e2e

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/kernel"
)

// TestDashboardDrawsMembersInCanonicalOrder: the tool receives the
// arguments as canonical JSON (RFC 8785: members sorted by their names'
// UTF-16 code units, so "1", "10", "9", "amount"). The card drew them from
// a JavaScript object, whose iteration puts integer-like names first, in
// numeric order ("1", "9", "10"): the approver read the members in another
// order than the bytes the tool gets. The Arguments pane, the Amend box's
// starting text, a confirm's details and the intent's context must each
// be drawn in the canonical order.
func TestDashboardDrawsMembersInCanonicalOrder(t *testing.T) {
	lk, open := dashboardAsLead(t)
	args := `{"order":"A-77","amount":900,"currency":"USD","9":"nine","10":"ten","1":{"20":"x","3":"y"}}`
	call := lk.submit(t, "refunds-edit", "edit_refund", args,
		`{"purpose":"Goodwill refund","max_amount":{"units":900,"currency":"USD"},"context":{"9":"nine","10":"ten"}}`)
	if call.Status != kernel.StatusPendingApproval {
		t.Fatalf("not parked: %+v", call)
	}
	confirm := lk.submit(t, "confirm", "confirm", `{"prompt":"Pay the supplier?","details":{"9":"nine","10":"ten","2":"two"}}`, "")
	if confirm.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm not parked: %+v", confirm)
	}
	ctx := open()
	sel, csel := card(call.ApprovalRequestID), card(confirm.ApprovalRequestID)
	browse(t, ctx, "cards", chromedp.WaitVisible(css(sel)), chromedp.WaitVisible(css(csel)))

	want, err := canon.Canonicalize([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, js string }{
		{"the Arguments pane", `document.querySelector('` + sel + ` details.args pre').textContent`},
		{"the Amend box", `document.querySelector('` + sel + ` textarea.amend-args').value`},
	} {
		drawn := read(t, ctx, c.what, chromedp.Evaluate[string](c.js))
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(drawn)); err != nil {
			t.Fatalf("%s is not JSON: %v\n%s", c.what, err, drawn)
		}
		if b.String() != string(want) {
			t.Errorf("%s draws the members in another order than the tool receives them:\ndrawn: %s\ntool:  %s", c.what, b.String(), want)
		}
	}
	for _, c := range []struct{ what, sel, want string }{
		{"the intent's context", sel + ` .intent-context dt`, `"10","9"`},
		{"the confirm's details", csel + ` .confirm-details dt`, `"10","2","9"`},
	} {
		names := read(t, ctx, c.what, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('`+c.sel+`'), (e) => e.textContent).join(',')`))
		if names != c.want {
			t.Errorf("%s lists its names as %s, not in the canonical order %s", c.what, names, c.want)
		}
	}
}
