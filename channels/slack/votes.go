package slack

import (
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/chiokernel/chio/internal/invisible"
)

// The votes a message lists, one a line, with their notes.
//
// A note may be approval.MaxNoteLen bytes, and escaping can make it six
// times longer (a line break is written \u000A). Listed whole in one block
// clipped at Slack's limit, one long note pushed every later vote and the
// outcome out of the message: the channel saw fewer votes than there were.
// So a note (and a resolution's reason) is shown up to maxNoteShown bytes,
// then marked as cut with where to read it whole, and the lines are spread
// over as many context blocks as they need.
const (
	// maxNoteShown bounds the escaped text of one note on a vote's line.
	maxNoteShown = 500
	// maxBlocks is Slack's limit on the blocks of one message.
	maxBlocks = 50
	// blockVotes is the id of the first votes block; the next ones are
	// blockVotes_2, blockVotes_3… (a message's block ids are unique).
	blockVotes = "chio_votes"
)

// shownNote is escape(s) for a vote's line: cut, past maxNoteShown bytes,
// at a character, with a marker that says how much is left out and where
// it is shown whole. what names the text ("note", "reason").
func shownNote(s, what, approvalID string) string {
	if e := escape(s); len(e) <= maxNoteShown {
		return e
	}
	var b, e strings.Builder
	afterSpace := false
	stacked := invisible.StackedMarks(s)
	for i, r := range s {
		e.Reset()
		escapeRune(&e, r, afterSpace, stacked.At(i))
		if b.Len()+e.Len() > maxNoteShown {
			return fmt.Sprintf("%s… (%s cut: %d more bytes, see chio approval show %s)", b.String(), what, len(s)-i, escape(approvalID))
		}
		b.WriteString(e.String())
		afterSpace = isSpace(r)
	}
	return b.String()
}

// votesBlocks lays lines out in context blocks within Slack's limit on a
// block's text, in order, using at most room blocks (at least 1). Were
// that too few, the last block says how many lines are left out and where
// to read them: a vote is never dropped without a word.
func votesBlocks(lines []string, room int, approvalID string) []slackapi.Block {
	var texts []string
	cur := ""
	for _, l := range lines {
		l = clip(l, maxContextText) // a line is short (notes are cut), but never longer than a block
		if cur != "" && len(cur)+1+len(l) > maxContextText {
			texts = append(texts, cur)
			cur = ""
		}
		if cur != "" {
			cur += "\n"
		}
		cur += l
	}
	texts = append(texts, cur)
	if room < 1 {
		room = 1
	}
	if len(texts) > room {
		left := 0
		for _, t := range texts[room-1:] {
			left += strings.Count(t, "\n") + 1
		}
		texts = append(texts[:room-1], fmt.Sprintf(":warning: %d more lines of votes are not shown here: see chio approval show %s or the dashboard", left, escape(approvalID)))
	}
	out := make([]slackapi.Block, len(texts))
	for i, t := range texts {
		id := blockVotes
		if i > 0 {
			id = fmt.Sprintf("%s_%d", blockVotes, i+1)
		}
		out[i] = slackapi.NewContextBlock(id, mrkdwn(t))
	}
	return out
}
