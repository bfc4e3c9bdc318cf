package chio_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	chio "github.com/chiokernel/chio/sdk"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

const votePolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
amount = "/amount"
currency = "/currency"
action = "charge"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
`

// chiod answers 500 vote_recorded when the approver's vote committed and a
// step after it failed (kernel/vote_recorded.go). The SDK read any 500 as
// ErrOutcomeUnknown ("retry, it may have run"), so an approver's program
// was never told its vote IS recorded and must not be cast again. Real
// chiod API, real bbolt store that goes down right after the vote.
func TestRespondAfterTheVoteCommittedIsErrVoteRecorded(t *testing.T) {
	lead, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := testkit.NewDownAfterStore()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(votePolicy, lead.Public()), Serve: true,
		Grants: []string{"refunds"}, WrapStore: st.Wrap})
	out := w.Submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	c, err := chio.NewClient(w.URL, chio.WithBearer(w.AdminToken))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req, err := c.Approval(ctx, out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := chio.SignApproval(req, lead)
	if err != nil {
		t.Fatal(err)
	}
	st.DownAfter(1) // the vote's commit lands; nothing after it
	_, err = c.Respond(ctx, out.ApprovalRequestID, tok)
	var ae *chio.APIError
	if !errors.Is(err, chio.ErrVoteRecorded) || errors.Is(err, chio.ErrOutcomeUnknown) || errors.Is(err, chio.ErrUnavailable) ||
		!errors.As(err, &ae) || ae.Status != 500 || ae.Code != "vote_recorded" || !strings.Contains(err.Error(), "is recorded") {
		t.Fatalf("the vote is durable, yet Respond returned %v (ErrVoteRecorded=%v, ErrOutcomeUnknown=%v)",
			err, errors.Is(err, chio.ErrVoteRecorded), errors.Is(err, chio.ErrOutcomeUnknown))
	}
	st.Up()
	// Voting again is refused as before: the token is spent.
	if _, err := c.Respond(ctx, out.ApprovalRequestID, tok); !errors.Is(err, chio.ErrConflict) || errors.Is(err, chio.ErrVoteRecorded) {
		t.Fatalf("the same token again: %v", err)
	}
}
