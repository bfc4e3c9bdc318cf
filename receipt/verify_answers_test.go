package receipt

import (
	"encoding/json"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// On a question, an approval counts toward the deciding vote only when it
// gives the same answers (approval.Request.AgreeingWith); the kernel names any
// other approval in "uncounted". verify read no answers: a final receipt
// listing as counted an approver whose token answered otherwise than the
// deciding token verified OK.
func TestVerifyCountedApprovalsGiveTheDecidingAnswers(t *testing.T) {
	lead, cfo := fxApprover.Public().String(), fxCFO.Public().String()
	answered := func(by keys.PrivateKey, id, answers string) EvidenceVote {
		tok := map[string]any{"schema": approvalTokenSchema, "id": id, "approver": by.Public().String(), "subject": fxAgent,
			"governed_intent_hash": fxHash("req-2"), "request_id": "ar-1", "decision": "approved",
			"issued_at": int64(1_700_000_000), "expires_at": int64(1_700_003_600)}
		if answers != "" {
			tok["answers"] = json.RawMessage(answers)
		}
		raw, err := signed.Sign(by, approvalTokenSchema, tok)
		if err != nil {
			t.Fatal(err)
		}
		return EvidenceVote{Approver: by.Public().String(), Token: raw}
	}
	cases := []struct {
		name      string
		cfo       string // the CFO's answers ("" = none)
		uncounted []any
		want      string // "" = verifies OK
	}{
		{"same answers, member order aside", `{"note":"ok","env":"prod"}`, nil, ""},
		{"other answers, uncounted", `{"env":"staging","note":"ok"}`, []any{cfo}, ""},
		{"other answers, counted", `{"env":"staging","note":"ok"}`, nil,
			"lists " + cfo + " in approvers, counted, but its token at-c answers {\"env\":\"staging\",\"note\":\"ok\"}, not the deciding token at-1's {\"env\":\"prod\",\"note\":\"ok\"}"},
		{"no answers, counted", "", nil, "its token at-c answers nothing, not the deciding token at-1's"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := fxReceipts()
			rs[3].Metadata["approvers"] = []any{lead, cfo}
			rs[3].Metadata["dissenters"] = []any{}
			if c.uncounted != nil {
				rs[3].Metadata["uncounted"] = c.uncounted
			}
			ev := append([]any{ApprovalEvidence{Type: EvidenceApproval, ApprovalRequestID: "ar-1", PolicyID: "ask",
				TrustedApprovers: []string{lead, cfo},
				Votes:            []EvidenceVote{answered(fxApprover, "at-1", `{"env":"prod","note":"ok"}`), answered(fxCFO, "at-c", c.cfo)}}}, fxEvidence(t)[1:]...)
			rep := verifyBytes(t, fxExport(t, rs, fxKernel, ev))
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
