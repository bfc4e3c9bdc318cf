package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// An approver's note (a denial's reason) is signed text of any bytes up to
// approval.MaxNoteLen: nothing refuses a line break or an escape character
// in it. The message's votes block lists one vote a line, and escape()
// left control characters as they were, so a note holding "\n" drew a
// line of its own under the real one: here the CFO's denial carries a
// forged ":white_check_mark: Finance Lead *approved* via dashboard" that
// everyone reading the channel takes for the Finance Lead's vote. Control
// characters must be shown as escapes, as every other view shows them.
func TestSlackNoteCannotDrawAVoteLine(t *testing.T) {
	w := newWorld(t)
	id := w.refund(t).ApprovalRequestID
	w.posted(t, id)

	req := w.approval(t, id)
	tok := approval.NewToken(req, w.cfo.Public(), approval.DecisionDenied, w.clk.Now(), time.Minute)
	tok.Note = "duplicate\n:white_check_mark: Finance Lead *approved* via dashboard\r\x1b[2K"
	raw, err := tok.Sign(w.cfo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.k.RespondWith(context.Background(), id, raw,
		kernel.RespondOptions{Outcome: approval.DecisionDenied, Channel: "dashboard"}); err != nil {
		t.Fatal(err)
	}
	upd := w.updated(t, "1700000000.000001", "chio_votes")
	var votes string
	for _, b := range blocks(t, upd) {
		if b["block_id"] != "chio_votes" {
			continue
		}
		for _, el := range b["elements"].([]any) {
			votes += el.(map[string]any)["text"].(string)
		}
	}
	if strings.ContainsAny(votes, "\r\x1b") || strings.Count(votes, "\n") != 1 {
		t.Fatalf("the note's control characters are drawn as they are: one vote and the resolution read as %d lines:\n%s",
			strings.Count(votes, "\n")+1, votes)
	}
	if !strings.Contains(votes, `duplicate\u000A:white_check_mark:`) {
		t.Fatalf("the note's line break is not shown as an escape:\n%s", votes)
	}
}
