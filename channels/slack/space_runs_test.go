package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// Slack keeps runs of spaces and wraps a line where the reader's window
// ends: spaces at the end of a line hang past it, and the text after them
// starts the next line. So an approver's note "duplicate", a run of
// spaces, then ":white_check_mark: Finance Lead *approved* via dashboard"
// drew a vote line of its own under the real one, whatever the window's
// width, as a line break did before it was escaped
// (TestSlackNoteCannotDrawAVoteLine); an argument's run of spaces does the
// same inside the arguments. In a run of spaces, every space after the
// first is written as an escape, as the CLI writes them.
func TestSlackMarksRunsOfSpaces(t *testing.T) {
	w := newWorld(t)
	run := strings.Repeat(" ", 400)
	id := w.submit(t, "issue_refund", `{"customer_id":"cust-1`+run+`acct-MALLORY","amount":450,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`).ApprovalRequestID
	w.posted(t, id)

	req := w.approval(t, id)
	tok := approval.NewToken(req, w.cfo.Public(), approval.DecisionDenied, w.clk.Now(), time.Minute)
	tok.Note = "duplicate" + run + ":white_check_mark: Finance Lead *approved* via dashboard"
	raw, err := tok.Sign(w.cfo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: approval.DecisionDenied, Channel: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	upd := w.updated(t, "1700000000.000001", "chio_votes")
	var all []string
	for _, b := range blocks(t, upd) {
		all = append(all, texts(b)...)
	}
	msg := strings.Join(all, "\n")
	if strings.Contains(msg, "  ") {
		at := strings.Index(msg, "  ")
		t.Errorf("the message holds a run of spaces from the agent or an approver, which Slack wraps into a line of its own:\n…%.200s…", msg[max(0, at-60):])
	}
	for _, want := range []string{`duplicate \u0020\u0020`, `"cust-1 \u0020\u0020`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not show the run of spaces as escapes (%s)", want)
		}
	}
}
