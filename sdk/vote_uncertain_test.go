package chio_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chio "github.com/chiokernel/chio/sdk"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

// voteUncertainFixture is testdata/sdk/vote_uncertain.json, shared with the
// Python and TypeScript SDKs' tests: chiod's answer to a vote whose own
// commit may or may not have landed. TestRespondWhoseVoteCommitAnswerWasLost
// checks it is what the real API answers.
type voteUncertainFixture struct {
	Status  int    `json:"status"`
	Error   string `json:"error"`
	Message string `json:"message"` // {approval_id} stands for the approval id
}

func readVoteUncertainFixture(t *testing.T) voteUncertainFixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "sdk", "vote_uncertain.json")) // TestMain runs from the repository root
	if err != nil {
		t.Fatal(err)
	}
	var fx voteUncertainFixture
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

// chiod answers a vote whose own commit failed in a way that may still have
// reached the disk (an fsync error; a COMMIT whose answer was lost) with
// "your vote may or may not be recorded; present it again"
// (kernel.ErrVoteUncertain). It did so as 503 "unavailable", which the SDK
// documents as "nothing was allowed by that request": an approver's program
// was told its vote did nothing when it may have approved, and run, the
// call. Real chiod API, real bbolt store whose vote commit lands but is
// reported failed.
func TestRespondWhoseVoteCommitAnswerWasLost(t *testing.T) {
	lead, err := keys.Generate(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &testkit.LostAnswerStore{}
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
	st.LoseNextAnswer() // the vote's commit lands, its answer says it failed
	_, err = c.Respond(ctx, out.ApprovalRequestID, tok)
	var ae *chio.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("Respond: %v", err)
	}
	if !errors.Is(err, chio.ErrVoteUncertain) || errors.Is(err, chio.ErrUnavailable) || errors.Is(err, chio.ErrOutcomeUnknown) || errors.Is(err, chio.ErrVoteRecorded) ||
		ae.Status != 503 || ae.Code != "vote_uncertain" || !strings.Contains(err.Error(), "may or may not be recorded") {
		t.Fatalf("the vote may be recorded, yet Respond returned %v (ErrUnavailable, \"nothing was allowed\": %v)",
			err, errors.Is(err, chio.ErrUnavailable))
	}
	fx := readVoteUncertainFixture(t)
	if want := strings.ReplaceAll(fx.Message, "{approval_id}", out.ApprovalRequestID); ae.Status != fx.Status || ae.Code != fx.Error || ae.Message != want {
		t.Fatalf("testdata/sdk/vote_uncertain.json is not chiod's answer: got %d %q %q", ae.Status, ae.Code, ae.Message)
	}
	st.Up()
	// It was recorded: the same token again is refused as a replay, and
	// the call was approved and ran once.
	if _, err := c.Respond(ctx, out.ApprovalRequestID, tok); !errors.Is(err, chio.ErrConflict) {
		t.Fatalf("the same token again: %v", err)
	}
	if r, err := c.Approval(ctx, out.ApprovalRequestID); err != nil || len(r.Votes) != 1 {
		t.Fatalf("the vote was not recorded once: %+v %v", r, err)
	}
}
