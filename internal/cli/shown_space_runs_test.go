package cli_test

import (
	"strings"
	"testing"
)

// TestApprovalViewsMarkRunsOfSpaces: an argument is printed on one line,
// and a terminal wraps a long line where its width ends. A value holding a
// run of spaces ("cust-1", spaces to the end of the terminal's line, then
// "  amount:   1 USD") drew a blank that ends the visual line as a real one
// ends, and a next visual line that reads as the request's own amount line
// (watch) or AMOUNT row (show) under it: the approver read "1 USD" where
// the tool moves 450000. Control characters are already escaped; in a run
// of spaces, every space after the first is written as an escape too, so
// no value draws a blank wider than one space, and no wrapped line can
// start indented as the labels are (two spaces, or a padded column).
func TestApprovalViewsMarkRunsOfSpaces(t *testing.T) {
	w := newApprovalWorld(t)
	fake := "cust-1" + strings.Repeat(" ", 300) + "  amount:   1 USD" + strings.Repeat(" ", 300) + "AMOUNT          1 USD"
	out := w.submit(t, "issue_refund", `{"customer_id":"`+fake+`","amount":450000,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450000,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("show: exit %d %s", code, se)
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	for _, v := range []struct{ what, out string }{{"chio approval show", so}, {"chio approval watch", wo}} {
		var line string
		for _, l := range strings.Split(v.out, "\n") {
			if strings.Contains(l, "cust-1") {
				line = l
			}
		}
		_, value, ok := strings.Cut(line, "{")
		if !ok {
			t.Fatalf("`%s` prints no arguments:\n%s", v.what, v.out)
		}
		if strings.Contains(value, "  ") {
			t.Errorf("`%s` prints a run of spaces from an argument as it is: a wrapped line can pass for the request's own:\n%.200s…", v.what, value)
		}
		// Marked, not dropped: the value is what the tool receives.
		if !strings.Contains(value, `cust-1 `+strings.Repeat(`\u0020`, 299)+`\u0020\u0020amount:`) {
			t.Errorf("`%s` does not show the run of spaces as escapes:\n%.200s…", v.what, value)
		}
	}
}
