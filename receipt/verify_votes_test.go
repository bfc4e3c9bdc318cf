package receipt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// The votes a final receipt signs (approvers, dissenters) against the
// tokens the export's evidence carries (verify_votes.go).

var (
	fxCFO = keys.FromSeed(bytes.Repeat([]byte{10}, 32))
	fxSRE = keys.FromSeed(bytes.Repeat([]byte{11}, 32))
)

// vote is a token the evidence carries: by whom, its id, its decision.
type vote struct {
	by       keys.PrivateKey
	id, says string
}

// quorumExport is the fixture's export with meta added to ar-1's final
// receipt (rc-4, decided by token at-1) and votes as ar-1's evidence.
func quorumExport(t *testing.T, meta map[string]any, votes []vote) []byte {
	t.Helper()
	rs := fxReceipts()
	for k, v := range meta {
		rs[3].Metadata[k] = v
	}
	var trusted []string
	var ev []EvidenceVote
	for _, v := range votes {
		trusted = append(trusted, v.by.Public().String())
		ev = append(ev, EvidenceVote{Approver: v.by.Public().String(), Token: fxSignToken(t, v.by,
			fxToken{ID: v.id, Subject: fxAgent, GovernedIntentHash: fxHash("req-2"), RequestID: "ar-1", Decision: v.says})})
	}
	evidence := append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds",
		TrustedApprovers: trusted, Votes: ev}}, fxEvidence(t)[1:]...)
	return fxExport(t, rs, fxKernel, evidence)
}

func TestVerifySignedVotes(t *testing.T) {
	lead, cfo, sre := fxApprover.Public().String(), fxCFO.Public().String(), fxSRE.Public().String()
	signedAll := map[string]any{"approvers": []any{lead, cfo}, "dissenters": []any{sre}}
	signedOld := map[string]any{"approvers": []any{lead, cfo}} // before "dissenters"
	honest := []vote{{fxApprover, "at-1", "approved"}, {fxCFO, "at-c", "approved"}, {fxSRE, "at-s", "denied"}}
	cases := []struct {
		name      string
		meta      map[string]any
		votes     []vote
		want      string // "" = verifies OK
		tokens    int    // with ar-2's one
		unvouched int
	}{
		{"every vote signed and present", signedAll, honest, "", 4, 0},
		{"an approver's vote dropped", signedAll, []vote{honest[0], honest[2]}, "receipt rc-4 (seq 4): receipt names " + cfo + " in approvers, but the approval evidence for ar-1 (line 11) holds no valid token by that key", 0, 0},
		{"a dissenting vote dropped", signedAll, honest[:2], "receipt names " + sre + " in dissenters", 0, 0},
		{"a vote no receipt names", map[string]any{"approvers": []any{lead, cfo}, "dissenters": []any{}}, honest,
			"approval ar-1: token at-s by " + sre + " is accounted for by no signed receipt: final receipt rc-4 (seq 4) names that key neither", 0, 0},
		{"a listed approver's token denies", signedAll, []vote{honest[0], {fxCFO, "at-c", "denied"}, honest[2]},
			`final receipt rc-4 lists ` + cfo + ` in approvers, deciding "approved", but token at-c says "denied"`, 0, 0},
		{"a dissenter's token approves", signedAll, []vote{honest[0], honest[1], {fxSRE, "at-s", "approved"}},
			`lists ` + sre + ` among its dissenters, but token at-s says "approved"`, 0, 0},
		{"two tokens by one approver", signedAll, append(honest, vote{fxCFO, "at-c2", "approved"}),
			"approver " + cfo + " has two tokens (at-c, at-c2)", 0, 0},
		{"a key in both lists", map[string]any{"approvers": []any{lead, cfo}, "dissenters": []any{cfo}}, honest[:2],
			"receipt names " + cfo + " twice (in approvers and dissenters)", 0, 0},
		{"malformed list", map[string]any{"approvers": lead}, honest[:1], "metadata approvers is not a list of approver keys", 0, 0},
		// A single vote needs no list (every version lists approvers
		// whenever more than one voted): another token is unaccounted.
		{"single vote, a token added", nil, []vote{honest[0], honest[2]}, "token at-s by " + sre + " is accounted for by no signed receipt", 0, 0},
		// Receipts signed before "dissenters": the approvers are required,
		// and a token they do not name is reported unchecked, not failed.
		{"older receipt, dissenting vote", signedOld, honest, "", 3, 1},
		{"older receipt, an approver's vote dropped", signedOld, []vote{honest[0], honest[2]}, "receipt names " + cfo + " in approvers", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := verifyBytes(t, quorumExport(t, c.meta, c.votes))
			if c.want == "" {
				if !rep.OK() || rep.Tokens != c.tokens || rep.Unvouched != c.unvouched {
					t.Fatalf("tokens %d (want %d), unvouched %d (want %d), problems:\n%s", rep.Tokens, c.tokens, rep.Unvouched, c.unvouched, problems(rep))
				}
				return
			}
			expectProblem(t, rep, 0, c.want)
		})
	}
}

// Evidence for a request whose final receipt names no deciding token (or
// that has none): no signed receipt accounts for its tokens.
func TestVerifyEvidenceNoReceiptDecided(t *testing.T) {
	rs := fxReceipts()
	rs[3].Metadata = map[string]any{"approval_request_id": "ar-1", "previous_receipt_id": "rc-2"} // decided by no token
	tok := fxSignToken(t, fxApprover, fxToken{ID: "at-1", Subject: fxAgent, GovernedIntentHash: fxHash("req-2"), RequestID: "ar-1", Decision: "approved"})
	ev := append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "refunds",
		TrustedApprovers: []string{fxApprover.Public().String()}, Votes: []EvidenceVote{{Approver: fxApprover.Public().String(), Token: json.RawMessage(tok)}}}}, fxEvidence(t)[1:]...)
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	expectProblem(t, rep, 11, "approval ar-1: token at-1 by "+fxApprover.Public().String()+" is accounted for by no signed receipt: no final receipt of this request names a deciding approval_token_id")
	if strings.Contains(problems(rep), "two tokens") {
		t.Fatal(problems(rep))
	}
}
