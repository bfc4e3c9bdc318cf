package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// The kernel reads a presented token's id to refuse a replay before it
// verifies the token, and it read it with encoding/json, which matches
// member names in any letter case, while the token's own decoder matches
// them exactly. A token whose "id" is spelt "ID" has no id for the
// verifier, but the replay check read one: presented with a spent token's
// id, it was answered 409 replay_detected ("already used") instead of 403
// approval_rejected naming the malformed token.
func TestTokenIDIsReadAsTheVerifierReadsIt(t *testing.T) {
	f := newApprovalsFixture(t)
	first := f.pendingRefund(t)
	tok := f.token(t, keyAlice, first.ApprovalRequestID, "approved", nil)
	if status, m := f.do(t, "POST", "/approvals/"+first.ApprovalRequestID+"/respond", respondBody(tok, ""), nil); status != 200 {
		t.Fatalf("approve: %d %v", status, m)
	}
	second := f.pendingRefund(t)
	fresh := f.token(t, keyAlice, second.ApprovalRequestID, "approved", nil)
	var spent struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(tok, &spent); err != nil || spent.ID == "" || !strings.Contains(string(fresh), `"id":"`) {
		t.Fatalf("token %s: %v", fresh, err)
	}
	// The fresh token with its id member renamed "ID" and given the spent id.
	var members map[string]json.RawMessage
	if err := json.Unmarshal(fresh, &members); err != nil {
		t.Fatal(err)
	}
	delete(members, "id")
	members["ID"], _ = json.Marshal(spent.ID)
	bad, _ := json.Marshal(members)

	status, m := f.do(t, "POST", "/approvals/"+second.ApprovalRequestID+"/respond", respondBody(bad, ""), nil)
	if msg, _ := m["message"].(string); status != 403 || m["error"] != "approval_rejected" || !strings.Contains(msg, "malformed") {
		t.Fatalf("a token without an exact \"id\" member: %d %v; want 403 approval_rejected naming it malformed", status, m)
	}
	// Nothing changed: the request is still pending, and its real token decides it.
	if status, m := f.do(t, "POST", "/approvals/"+second.ApprovalRequestID+"/respond", respondBody(fresh, ""), nil); status != 200 || m["outcome"] != "approved" {
		t.Fatalf("the real token after the refusal: %d %v", status, m)
	}
}
