package slack_test

import (
	"strings"
	"testing"
)

// Combining marks pile on the character before them: three hundred acute
// accents after "acct-1" draw as one character (or are cut off above the
// line), and the same accent twice draws as once, while the tool receives
// every one. The dashboard writes such a run (more than four marks, or the
// same mark twice in a row) as \uXXXX escapes; Slack wrote it raw, so the
// approver read "acct-1" where the tool gets another account.
func TestSlackEscapesStackedCombiningMarks(t *testing.T) {
	w := newWorld(t)
	pile := strings.Repeat("\u0301", 300)
	nguyen := "Nguye\u0302\u0303n" // a letter with two different marks: text
	out := w.submit(t, "issue_refund", `{"customer_id":"acct-1`+pile+`","amount":300,"currency":"USD","ref":"e\u0301\u0301"}`,
		`{"purpose":"order 8834`+pile+`","max_amount":{"units":450,"currency":"USD"}}`)
	v := w.posted(t, out.ApprovalRequestID)
	var all []string
	for _, b := range blocks(t, v) {
		all = append(all, texts(b)...)
	}
	msg := strings.Join(append(all, v.Get("text")), "\n")
	if strings.Contains(msg, "\u0301\u0301") {
		t.Errorf("the message holds a stacked run of combining marks, drawn as one character or none:\n%.300s", msg)
	}
	for _, want := range []string{`"customer_id":"acct-1\u0301\u0301\u0301`, `"ref":"e\u0301\u0301"`, `order 8834\u0301\u0301`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not show %s", want)
		}
	}
	// A letter with one or two different marks (Vietnamese, Hindi) is text.
	out = w.submit(t, "issue_refund", `{"customer_id":"`+nguyen+`","amount":300,"currency":"USD"}`,
		`{"purpose":"order 8835","max_amount":{"units":450,"currency":"USD"}}`)
	v = w.posted(t, out.ApprovalRequestID)
	all = nil
	for _, b := range blocks(t, v) {
		all = append(all, texts(b)...)
	}
	if msg := strings.Join(all, "\n"); !strings.Contains(msg, nguyen) {
		t.Errorf("a letter with two different marks is escaped:\n%.300s", msg)
	}
}
