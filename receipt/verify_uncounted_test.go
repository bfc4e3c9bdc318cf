package receipt

import (
	"testing"
)

// "uncounted" names the keys among a final receipt's approvers and
// dissenters whose votes the deciding policy did not count (kernel
// chainReceipt). verify read nothing of it: a receipt naming in it a key
// no vote of the request has, a malformed list, or every approving vote
// of an allow (the call ran on no counted approval) verified OK.
func TestVerifyUncountedAgreesWithTheVotes(t *testing.T) {
	lead, cfo, sre := fxApprover.Public().String(), fxCFO.Public().String(), fxSRE.Public().String()
	other := fxOther.Public().String()
	honest := []vote{{fxApprover, "at-1", "approved"}, {fxCFO, "at-c", "approved"}, {fxSRE, "at-s", "denied"}}
	signed := func(uncounted any) map[string]any {
		return map[string]any{"approvers": []any{lead, cfo}, "dissenters": []any{sre}, "uncounted": uncounted}
	}
	cases := []struct {
		name string
		meta map[string]any
		want string // "" = verifies OK
	}{
		// What the kernel writes: a removed approver's vote, either side.
		{"a dissenter uncounted", signed([]any{sre}), ""},
		{"an approver uncounted", signed([]any{cfo}), ""},
		{"a key no vote has", signed([]any{other}), "receipt names " + other + " in uncounted, but not among its approvers or dissenters"},
		{"uncounted without the lists", map[string]any{"uncounted": []any{lead}}, "receipt names " + lead + " in uncounted, but not among its approvers or dissenters"},
		{"malformed", signed(sre), "metadata uncounted is not a list of approver keys"},
		{"every approval of an allow uncounted", signed([]any{lead, cfo}), "allow receipt counts none of its approvers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			votes := honest
			if _, ok := c.meta["approvers"]; !ok {
				votes = honest[:1]
			}
			rep := verifyBytes(t, quorumExport(t, c.meta, votes))
			if c.want == "" {
				if !rep.OK() {
					t.Fatalf("problems:\n%s", problems(rep))
				}
				return
			}
			expectProblem(t, rep, 0, c.want)
		})
	}
}

// A human-approval deny is written in the commit of the denial that
// decided it, judged by the policy in force there: that vote counted.
func TestVerifyUncountedDecidingDenial(t *testing.T) {
	lead, cfo := fxApprover.Public().String(), fxCFO.Public().String()
	rs := fxReceipts()
	rs[5].Metadata["approvers"] = []any{lead}
	rs[5].Metadata["dissenters"] = []any{cfo}
	rs[5].Metadata["uncounted"] = []any{lead}
	ev := fxEvidence(t)
	ar2 := ev[1].(ApprovalEvidence)
	ar2.TrustedApprovers = append(ar2.TrustedApprovers, cfo)
	ar2.Votes = append(ar2.Votes, EvidenceVote{Approver: cfo, Token: fxSignToken(t, fxCFO,
		fxToken{ID: "at-c", Subject: fxAgent, GovernedIntentHash: fxHash("req-5"), RequestID: "ar-2", Decision: "approved"})})
	ev[1] = ar2
	rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
	expectProblem(t, rep, 0, "receipt is denied by approver "+lead+" (human-approval), whom it names in uncounted")
}
