package kernel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// askQuorumPolicy: an ask grant with quorum 2; %s are its approvers.
const askQuorumPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "ask"
server = "demo"
tool = "ask"
[grants.approval]
timeout_seconds = 300
quorum = 2
%s`

func askApprovers(pairs ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\n", pairs[i], pairs[i+1])
	}
	return b.String()
}

func answering(region string) func(*approval.Token) {
	return func(tk *approval.Token) { tk.Answers = json.RawMessage(`{"region":"` + region + `"}`) }
}

// A quorum of answers must agree among the votes that count. The Finance
// Lead answers "us", and a reload removes them (their key leaked): their
// vote no longer counts, yet every later answer had to repeat theirs
// ("these answers differ from those Finance Lead gave"), so a removed key
// still dictated the answer, or left the question unanswerable. The CFO
// and the SRE, who count, answer "eu" together, and "eu" is the answer.
func TestRemovedApproversAnswersBindNobody(t *testing.T) {
	f, out := retrustedDisagreement(t, 2, false)
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, sre, approval.DecisionApproved, answering("eu")), "", "")
	if err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the SRE's agreeing answer: %+v %v", res, err)
	}
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusAllowed || !strings.Contains(string(rec.Output), `"region":"eu"`) {
		t.Fatalf("answer: %s %s", rec.Status, rec.Output)
	}
}

// The other half of the rule: when a reload trusts the removed approver
// again, their "us" counts again beside the CFO's "eu". Two counted
// approvals that disagree are not a quorum of answers: the reload must not
// resolve the request with either, and the question stays open.
func TestReaddedApproversDisagreeingAnswerIsNoQuorum(t *testing.T) {
	f, out := retrustedDisagreement(t, 2, true)
	req, err := f.k.Approval(out.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.StatusPending {
		rec, _ := f.k.Call(out.RequestID)
		t.Fatalf("re-adding the Finance Lead resolved the question %s with answers that disagree (us, eu): call %s %s", req.Status, rec.Status, rec.Output)
	}
}
