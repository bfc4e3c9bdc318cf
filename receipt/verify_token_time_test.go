package receipt

import (
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/signed"
)

// An approval token's time fields are checked as the kernel checked them
// (approval.Verify): lifetime in (0, 3600] s, not expired before the call
// was parked, not issued more than 60 s after the final receipt. A token
// that could not have been accepted is evidence swapped after the fact.
func TestApprovalTokenTimesMustBeAcceptable(t *testing.T) {
	park, final := int64(1_700_000_002), int64(1_700_000_004) // rc-2 and rc-4, unix s
	cases := map[string][2]int64{
		"lifetime ten years, expired before the call existed": {1_000_000, 1_000_000 + 10*365*86400},
		"lifetime over 3600 s":                                {park - 10, park - 10 + 3601},
		"expires before issued":                               {park + 10, park},
		"expired before the call was parked":                  {park - 3000, park - 1},
		"issued more than 60 s after the final":               {final + 61, final + 61 + 600},
	}
	for name, times := range cases {
		t.Run(name, func(t *testing.T) {
			rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, withDecidingToken(t, times[0], times[1])))
			if rep.OK() {
				t.Fatalf("deciding token with issued_at %d, expires_at %d verifies; tokens %d", times[0], times[1], rep.Tokens)
			}
		})
	}
	// The edges the kernel accepts: a full 3600 s lifetime, issued 60 s
	// after the final receipt (clock skew), expiring just after the park.
	for name, times := range map[string][2]int64{
		"full lifetime, skewed 60 s": {final + 60, final + 60 + 3600},
		"expires just after parking": {park - 3599, park + 1},
	} {
		t.Run(name, func(t *testing.T) {
			if rep := verifyBytes(t, fxExport(t, fxReceipts(), fxKernel, withDecidingToken(t, times[0], times[1]))); !rep.OK() {
				t.Fatalf("acceptable token refused:\n%s", problems(rep))
			}
		})
	}
}

// withDecidingToken is the fixture's evidence with ar-1's deciding token
// at-1 re-signed with the given issued_at and expires_at.
func withDecidingToken(t *testing.T, issued, expires int64) []any {
	approver := fxApprover.Public().String()
	tok := map[string]any{"schema": approvalTokenSchema, "id": "at-1", "approver": approver, "subject": fxAgent,
		"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
		"issued_at": issued, "expires_at": expires}
	raw, err := signed.Sign(fxApprover, approvalTokenSchema, tok)
	if err != nil {
		t.Fatal(err)
	}
	return append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds",
		TrustedApprovers: []string{approver}, Votes: []EvidenceVote{{Approver: approver, Token: json.RawMessage(raw)}}}}, fxEvidence(t)[1:]...)
}
