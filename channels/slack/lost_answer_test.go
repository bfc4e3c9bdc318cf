package slack_test

import (
	"strings"
	"testing"
	"time"
)

// chat.postMessage's answer was lost (the connection dropped after Slack
// took the message): chiod did not know the message existed, the hub
// retried, and a second message for the same request was posted with
// nothing telling approvers that the first, which chiod never updates
// (it shows "Approval requested" and its buttons after the request is
// decided), may be in the channel. A message posted again after an
// uncertain post must say so.
func TestMessagePostedAgainAfterALostAnswerSaysSo(t *testing.T) {
	w := newWorld(t)
	w.mock.lostPostAnswers.Store(1)
	out := w.refund(t)
	id := out.ApprovalRequestID

	var mine []string
	for start := time.Now(); len(mine) < 2 && time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		mine = mine[:0]
		posts, _, _ := w.mock.snapshot()
		for _, p := range posts {
			if strings.Contains(p.Get("blocks"), id) {
				mine = append(mine, p.Get("blocks"))
			}
		}
	}
	if len(mine) != 2 {
		t.Fatalf("want the lost post and its retry, got %d post(s) for %s", len(mine), id)
	}
	if strings.Contains(mine[0], earlierNote) {
		t.Errorf("the first post warns of an earlier one: %s", mine[0])
	}
	if !strings.Contains(mine[1], earlierNote) {
		t.Fatalf("a second message for %s was posted with no word that an earlier one, never updated, may be in the channel: %s", id, mine[1])
	}
}

// A post Slack refused (it answered, with an error) posted nothing: its
// retry is the only message and must not warn of an earlier one.
func TestMessagePostedAfterARefusedPostDoesNotWarn(t *testing.T) {
	w := newWorld(t)
	w.mock.refusedPosts.Store(1)
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)
	posts, _, _ := w.mock.snapshot() // the refused post, then its retry
	for start := time.Now(); len(posts) < 2 && time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		posts, _, _ = w.mock.snapshot()
	}
	if len(posts) != 2 || strings.Contains(posts[1].Get("blocks"), earlierNote) {
		t.Fatalf("want a refused post and one message without the warning; posts: %v", posts)
	}
}

// earlierNote is part of what a message posted again says.
const earlierNote = "an earlier message for this request may be in this channel"
