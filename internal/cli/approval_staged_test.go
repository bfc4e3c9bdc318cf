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

// parkStaged parks a delete_file call and rewrites its request in the
// store with stage (what a reload leaves: votes of approvers no longer
// trusted, answers that disagree), returning the request's id.
func (w *approvalWorld) parkStaged(t *testing.T, stage func(*approval.Request)) string {
	t.Helper()
	out := w.submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	err := w.tw.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(out.ApprovalRequestID)
		if err != nil {
			return err
		}
		stage(req)
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.ApprovalRequestID
}

// stageVote adds a trusted approver (a fresh key) to req, named name, and
// their approval answering region (none when empty).
func stageVote(req *approval.Request, name, region string) {
	k, _ := keys.Generate(nil)
	v := approval.Vote{Approver: k.Public().String(), DisplayName: name, Decision: approval.DecisionApproved, TokenID: "t-" + name, Channel: "api"}
	if region != "" {
		v.Token = json.RawMessage(`{"answers":{"region":"` + region + `"}}`)
	}
	req.TrustedApprovers = append(req.TrustedApprovers, v.Approver)
	req.Votes = append(req.Votes, v)
}

// showLine runs `chio approval show id` and returns its output and the
// last line starting with prefix and containing has.
func (w *approvalWorld) showLine(t *testing.T, id, prefix, has string) (line, out string) {
	t.Helper()
	so, se, code := w.run(adminEnv(), "approval", "show", id)
	if code != 0 {
		t.Fatalf("approval show: exit %d: %s", code, se)
	}
	for _, l := range strings.Split(so, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, has) {
			line = l
		}
	}
	return line, so
}
