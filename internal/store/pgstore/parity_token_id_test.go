package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// An approval token's id keys the durable consumed set, so it must be one
// every store can key: a token whose id is not 1..128 characters of
// [A-Za-z0-9._:-] is malformed on either store, and changes nothing. It
// used to be taken as is: a NUL in it ("\u0000" in the JSON) approved the
// call on bbolt but failed the vote on PostgreSQL with an unclassified
// error, and a 40000-byte id approved it on PostgreSQL but failed on
// bbolt ("key too large").
func TestParityTokenIDsAStoreCannotKeyAreMalformed(t *testing.T) {
	approver := keys.FromSeed([]byte("approver-a-approver-a-approver-a"))
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	ctx := context.Background()
	for _, sd := range paritySides(t) {
		capRaw, _, err := sd.k.IssueCapability(agent.Public(), []string{"esc"}, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		park := func() string {
			t.Helper()
			c := testkit.NewCall(t, agent, capRaw, "demo", "delete_file", `{"path":"/tmp/x"}`, "", sd.clock.Now())
			out, err := sd.k.Submit(ctx, c)
			if err != nil || out.Status != kernel.StatusPendingApproval {
				t.Fatalf("%s: %+v %v", sd.name, out, err)
			}
			return out.ApprovalRequestID
		}
		for _, id := range []string{"at-\x00x", strings.Repeat("u", 40000), "at x", "at-" + strings.Repeat("7", 200)} {
			ar := park()
			tok := testkit.SignToken(t, sd.k, sd.clock.Now(), ar, approver, approval.DecisionApproved, func(tk *approval.Token) { tk.ID = id })
			short := id[:min(len(id), 12)]
			if _, err := sd.k.Respond(ctx, ar, tok, "", "api"); !errors.Is(err, approval.ErrMalformedToken) {
				t.Errorf("%s: token id %q…: %v, want ErrMalformedToken", sd.name, short, err)
			}
			if req, err := sd.k.Approval(ar); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
				t.Errorf("%s: token id %q…: the request is now %s with %d votes (%v), want pending with none", sd.name, short, req.Status, len(req.Votes), err)
			}
		}
		// A well-formed id still approves.
		ar := park()
		tok := testkit.SignToken(t, sd.k, sd.clock.Now(), ar, approver, approval.DecisionApproved, nil)
		if res, err := sd.k.Respond(ctx, ar, tok, "", "api"); err != nil || res.Outcome != approval.StatusApproved {
			t.Errorf("%s: a well-formed token: %+v %v", sd.name, res, err)
		}
	}
}
