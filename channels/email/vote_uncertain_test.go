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

// A vote through an email link whose commit lands but is reported failed
// may or may not be recorded. The link page was answered 503 "unavailable"
// (the code for "nothing happened"); it must be vote_uncertain, and the
// link must stay usable: the second click is what settles it (a recorded
// vote is refused as already cast, never counted twice).
func TestLinkVoteWhoseCommitAnswerWasLostSaysUncertain(t *testing.T) {
	lead, _ := keys.Generate(nil)
	st := &testkit.LostAnswerStore{}
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
	post := func() (int, map[string]any) {
		tok := w.Token(t, out.ApprovalRequestID, lead, approval.DecisionApproved, nil)
		res, err := http.Post(url, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	st.LoseNextAnswer()
	code, body := post()
	msg, _ := body["message"].(string)
	if code != http.StatusServiceUnavailable || body["error"] != "vote_uncertain" || !strings.Contains(msg, "may or may not be recorded") {
		t.Fatalf("the vote may be recorded, yet the approver was answered %d %v", code, body)
	}
	st.Up()
	// The second click settles it: the vote was recorded, and is refused
	// as already cast (the link was not spent).
	if code, body := post(); code != http.StatusConflict || body["error"] != "replay_detected" {
		t.Fatalf("the second click: %d %v", code, body)
	}
	if req, _ := w.Kernel.Approval(out.ApprovalRequestID); len(req.Votes) != 1 {
		t.Fatalf("the vote was counted twice: %+v", req)
	}
}
