package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// A question whose counted answers disagree (what a reload that trusts an
// earlier voter again leaves: "us" beside two "eu", quorum 3) is open: the
// kernel decides it only by three agreeing answers. `chio approval show`
// said "QUORUM 3/3 approved" for it; it must count the agreeing ones, 2/3.
func TestApprovalShowCountsOnlyAgreeingAnswersOfAQuestion(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		req.Kind, req.Quorum = approval.KindQuestion, 3
		for i, region := range []string{"us", "eu", "eu"} {
			k, _ := keys.Generate(nil)
			req.TrustedApprovers = append(req.TrustedApprovers, k.Public().String())
			req.Votes = append(req.Votes, approval.Vote{Approver: k.Public().String(), Decision: approval.DecisionApproved,
				TokenID: "t-" + region + string(rune('0'+i)), Channel: "api", Token: json.RawMessage(`{"answers":{"region":"` + region + `"}}`)})
		}
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("approval show: exit %d: %s", code, se)
	}
	var quorum string
	for _, l := range strings.Split(so, "\n") {
		if strings.HasPrefix(l, "QUORUM") {
			quorum = l
		}
	}
	if !strings.Contains(quorum, "2/3 approved") {
		t.Fatalf("approval show says %q of the open question; want 2/3 approved (two agreeing answers):\n%s", quorum, so)
	}
}

// Beside "QUORUM 2/3 approved" the three VOTE rows read alike: the one
// whose answers ("us") differ from the two agreeing ("eu") must say so.
func TestApprovalShowMarksAnApprovalThatAnsweredOtherwise(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		req.Kind, req.Quorum = approval.KindQuestion, 3
		for _, who := range []string{"Lead us", "CFO eu", "SRE eu"} {
			name, region, _ := strings.Cut(who, " ")
			k, _ := keys.Generate(nil)
			req.TrustedApprovers = append(req.TrustedApprovers, k.Public().String())
			req.Votes = append(req.Votes, approval.Vote{Approver: k.Public().String(), DisplayName: name, Decision: approval.DecisionApproved,
				TokenID: "t-" + name, Channel: "api", Token: json.RawMessage(`{"answers":{"region":"` + region + `"}}`)})
		}
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("approval show: exit %d: %s", code, se)
	}
	var lead string
	for _, l := range strings.Split(so, "\n") {
		if strings.HasPrefix(l, "VOTE") && strings.Contains(l, "by Lead") {
			lead = l
		}
	}
	if !strings.Contains(lead, "answered otherwise") || strings.Count(so, "answered otherwise") != 1 {
		t.Fatalf("the Lead's VOTE row %q must say their answers are not the agreeing ones, and only theirs:\n%s", lead, so)
	}
}
