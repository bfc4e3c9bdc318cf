package cli_test

import (
	"strings"
	"testing"
)

// TestApprovalViewsEscapeStackedMarks: combining marks pile on the
// character before them. Three hundred acute accents after "acct-1" draw
// in a terminal as one character (or none, cut off above the line), and
// the same accent twice as once, while the tool receives every one. The
// dashboard writes such a run (more than four marks, or the same mark
// twice in a row) as \uXXXX escapes; show and watch printed it raw.
func TestApprovalViewsEscapeStackedMarks(t *testing.T) {
	w := newApprovalWorld(t)
	pile := strings.Repeat("\u0301", 300)
	nguyen := "Nguye\u0302\u0303n" // a letter with two different marks: text
	out := w.submit(t, "issue_refund", `{"customer_id":"acct-1`+pile+`","amount":450000,"currency":"USD","ref":"e\u0301\u0301","name":"`+nguyen+`"}`,
		`{"purpose":"order 8834 re\u0301\u0301f","max_amount":{"units":450000,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("show: exit %d %s", code, se)
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	for _, v := range []struct{ what, out string }{{"chio approval show", so}, {"chio approval watch", wo}} {
		if strings.Contains(v.out, "\u0301\u0301") {
			t.Errorf("`%s` prints a stacked run of combining marks, drawn as one character or none:\n%.400s", v.what, v.out)
		}
		for _, want := range []string{`"acct-1\u0301\u0301\u0301`, `"e\u0301\u0301"`, `re\u0301\u0301f`, nguyen} {
			if !strings.Contains(v.out, want) {
				t.Errorf("`%s` does not show %s", v.what, want)
			}
		}
	}
}
