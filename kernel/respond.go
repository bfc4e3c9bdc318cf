package kernel

// Responding to a request: a signed token presented through any channel,
// checked, consumed and counted (the only way a human decision enters).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
)

// Respond presents a signed token (the only way a human decision enters
// the kernel). outcome, if non-empty, must equal the signed decision.
func (k *Kernel) Respond(ctx context.Context, approvalID string, tokenRaw []byte, outcome, channel string) (*RespondResult, error) {
	return k.RespondWith(ctx, approvalID, tokenRaw, RespondOptions{Outcome: outcome, Channel: channel})
}

// RespondOptions qualify a presented token.
type RespondOptions struct {
	Outcome string // must equal the signed decision when set
	Channel string // lands in the receipt's `channel` metadata
	// Custodial marks a token chiod signed for the approver with a key it
	// holds (Slack's slack_custodial); the receipt says `custodial: true`.
	// The token is verified exactly like any other.
	Custodial bool
}

// tokenID reads a checked token's "id" as its verifier will (canon's
// exact member names): encoding/json would also take "ID" or "Id", and a
// token the verifier refuses as malformed would be answered as a replay of
// whichever spent token's id it carried.
func tokenID(tokenRaw []byte) (string, error) {
	var members map[string]json.RawMessage // map keys match exactly
	var id string
	if json.Unmarshal(tokenRaw, &members) != nil || json.Unmarshal(members["id"], &id) != nil || id == "" {
		return "", fmt.Errorf("%w: not a token object with an \"id\"", approval.ErrMalformedToken)
	}
	return id, nil
}

// RespondWith is Respond with options.
func (k *Kernel) RespondWith(ctx context.Context, approvalID string, tokenRaw []byte, o RespondOptions) (*RespondResult, error) {
	outcome, channel := o.Outcome, o.Channel
	// A vote leads to a commit and maybe a dispatch; neither may be cut off
	// by the presenter going away.
	ctx = context.WithoutCancel(ctx)
	if channel == "" {
		channel = ChannelAPI
	}
	// Untrusted input meets its size limit before anything parses it.
	if len(tokenRaw) > approval.MaxTokenBytes {
		return nil, fmt.Errorf("%w: token larger than %d bytes", approval.ErrMalformedToken, approval.MaxTokenBytes)
	}
	if err := canon.Check(tokenRaw); err != nil {
		return nil, fmt.Errorf("%w: %v", approval.ErrMalformedToken, err)
	}
	presentedID, err := tokenID(tokenRaw)
	if err != nil {
		return nil, err
	}
	if _, seen := k.consumed.Get(presentedID); seen {
		return nil, approval.ErrReplay
	}
	var req *approval.Request
	var used bool
	err = k.store.View(func(tx ReadTx) error {
		var err error
		if req, err = tx.Approval(approvalID); err != nil {
			return err
		}
		used, err = tx.Consumed(presentedID)
		return err
	})
	if err != nil {
		return nil, err
	}
	if used || req.Status != approval.StatusPending {
		// The token spent or the request decided: if by a vote whose
		// answer was lost, it is told now (lost_votes.go), before the
		// presenter hears that it was.
		k.tellLostVotesOn(approvalID)
	}
	if used {
		k.consumed.Add(presentedID, struct{}{})
		return nil, approval.ErrReplay
	}
	// Nor a token none of the request's approvers signed: the route needs
	// no other credential, so that is anyone's, and it is refused below
	// whatever happens. Refused here, with the answer it would get there
	// (at the clock now), it costs no arrival (a shared store's writes)
	// and takes no longer on a real request than on a missing one.
	pol := k.Policy()
	if current, _ := withApproversNow(pol, atDecidingTier(pol, req)); !approval.SignedByTrusted(tokenRaw, current) {
		return nil, refuseStranger(tokenRaw, current, k.clock.Now(), outcome)
	}
	// The vote is judged at now, its arrival: a deadline firing before it
	// is recorded or refused waits for it (arrivals.go). Registered only
	// here, after the checks that need no clock (size, form, a request
	// that exists, a token not spent, signed by one of its approvers): on
	// a shared store an arrival is written to the database, and junk must
	// not cost writes. A request decided meanwhile is caught by the vote's
	// commit, as a late vote.
	now, arrived, err := k.arrive(ctx, approvalID)
	if err != nil {
		return nil, err
	}
	defer arrived()
	p := k.Policy()
	// The approvers are the policy's now, not those copied at parking time,
	// at the tier it waits at under p (passed over from one p leaves to the
	// calling agent alone, though p's reconcile may not have reached it).
	req, _ = withApproversNow(p, atDecidingTier(p, req))
	if req.Status != approval.StatusPending {
		return nil, notPending(tokenRaw, req, now, outcome)
	}
	tok, err := approval.Verify(tokenRaw, req, now, outcome)
	if errors.Is(err, approval.ErrDuplicateVote) {
		k.tellLostVotesOn(approvalID) // this approver's vote is recorded: maybe a lost one
	}
	if err != nil {
		return nil, err
	}
	if req.Kind == approval.KindQuestion && tok.Decision == approval.DecisionApproved {
		var q []approval.Question
		if err := json.Unmarshal(req.Questions, &q); err != nil {
			return nil, fmt.Errorf("%w: stored questions unreadable", ErrConflict)
		}
		if err := approval.ValidateAnswers(q, tok.Answers); err != nil {
			return nil, err
		}
	} else if len(tok.Answers) > 0 {
		// Nothing asked this approver for answers (a question's Decline
		// asks for none): stored with the vote, they would say more than
		// the approver decided. Refused here, nothing is consumed.
		return nil, fmt.Errorf("%w: answers are only for approving a question request, and this token %s a %s request; sign it without them",
			approval.ErrMalformedToken, map[string]string{approval.DecisionApproved: "approves", approval.DecisionDenied: "denies"}[tok.Decision], req.Kind)
	}
	if len(tok.AmendedArguments) > 0 {
		if req.Kind != approval.KindToolCall || tok.Decision != approval.DecisionApproved || req.Quorum > 1 {
			return nil, fmt.Errorf("%w: amended_arguments need an approval on a quorum-1 tool call", approval.ErrAmendmentRefused)
		}
		// Refused here, the token is not consumed and nothing changes; the
		// same rules run again when the call resumes.
		rec, err := k.Call(req.RequestID)
		if err != nil {
			return nil, err
		}
		if _, err := k.checkAmendment(p, req, rec, tok.AmendedArguments); err != nil {
			return nil, err
		}
	}
	vote := approval.Vote{Approver: tok.Approver, DisplayName: k.displayName(req, tok.Approver), TokenID: tok.ID,
		Decision: tok.Decision, Note: tok.Note, Channel: channel, Custodial: o.Custodial, At: now.Unix(), Token: json.RawMessage(tokenRaw)}
	return k.recordVote(ctx, req.ApprovalID, vote, tok, now, nil)
}

// refuseStranger is the refusal of a token none of req's approvers
// signed, as RespondWith gives it after the vote's arrival: notPending's
// on a request already decided, Verify's on a pending one.
func refuseStranger(tokenRaw []byte, req *approval.Request, now time.Time, outcome string) error {
	if req.Status != approval.StatusPending {
		return notPending(tokenRaw, req, now, outcome)
	}
	if _, err := approval.Verify(tokenRaw, req, now, outcome); err != nil {
		return err
	}
	return approval.ErrUntrustedSigner // not reached: Verify checks the signer
}

// notPending refuses a vote on a request already decided. When the token's
// approver has a vote recorded on it, the refusal says so (409
// replay_detected, "already decided this request"): that approver is most
// likely voting again after "your vote may or may not be recorded" (a
// second click and `chio approval deny` sign a fresh token), and their
// vote may be the one that decided the request. "Request is denied" alone
// (409 conflict) means to them that their vote came too late and was not
// recorded. The token is judged as on a pending request (approval.Verify
// answers ErrDuplicateVote for a recorded approver there too).
//
// Only a token signed by one of the request's approvers learns its status
// (even if the token is stale: its signer may know). Any other (unsigned,
// badly signed, or signed by a key that may not decide the request) gets
// Verify's refusal, as on a pending request: the token is the route's
// only credential, and how a request ended is read with a reader token,
// an approver session or the agent's own proof (SPEC §6).
func notPending(tokenRaw []byte, req *approval.Request, now time.Time, outcome string) error {
	_, err := approval.Verify(tokenRaw, req, now, outcome)
	switch {
	case errors.Is(err, approval.ErrDuplicateVote):
		return fmt.Errorf("%w; the request is %s", err, req.Status)
	case err != nil && !approval.SignedByTrusted(tokenRaw, req):
		return err
	}
	return fmt.Errorf("%w: request is %s", ErrConflict, req.Status)
}
