package email

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
)

const recordedPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "delete_file"

[[grants]]
id = "deploys"
server = "pay"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Lead"
contact = { email = "lead@example.com" }
`

// A vote through an email link that committed, followed by a failure (the
// store goes down before the approved call is run or denied), used to
// answer 503 "unavailable" and release the link as if "nothing was
// decided: the approver may try again". The vote is durable: the answer
// must say so (vote_recorded, not 503) and the link is spent.
func TestLinkVoteAfterTheVoteCommittedSaysRecorded(t *testing.T) {
	lead, _ := keys.Generate(nil)
	st := testkit.NewDownAfterStore()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(recordedPolicy, lead.Public()), Server: "pay",
		Grants: []string{"deploys"}, WrapStore: st.Wrap})
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	now := time.Now()
	c := testChannel(t, &now)
	srv := httptest.NewServer(c.Handler(w.Kernel))
	defer srv.Close()
	url := srv.URL + LinkPath + c.Link(out.ApprovalRequestID, lead.Public().String(), now.Add(time.Hour))
	post := func(decision string) (int, map[string]any) {
		tok := w.Token(t, out.ApprovalRequestID, lead, decision, nil)
		res, err := http.Post(url, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	st.DownAfter(1) // the vote's commit lands; nothing after it
	code, body := post(approval.DecisionApproved)
	msg, _ := body["message"].(string)
	if code == http.StatusServiceUnavailable || body["error"] != "vote_recorded" || !strings.Contains(msg, "is recorded") {
		t.Fatalf("the vote is durable, yet the approver was answered %d %v", code, body)
	}
	st.Up()
	if req, err := w.Kernel.Approval(out.ApprovalRequestID); err != nil || len(req.Votes) != 1 || req.Status != approval.StatusApproved {
		t.Fatalf("%+v %v", req, err)
	}
	// The link is spent: it does not invite a second vote.
	if code, body := post(approval.DecisionDenied); code != http.StatusGone {
		t.Fatalf("the link after a recorded vote: %d %v", code, body)
	}
}
