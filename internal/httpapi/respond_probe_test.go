package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestRespondIsNoOracleForRequestIDs: POST /approvals/{id}/respond needs no
// bearer, so whoever can reach chiod can post there. A token that is not
// an approver's — unsigned, or signed by a key the policy does not list —
// must be refused the same way (status, code and message) whether the id
// names a request or nothing at all: anyone could otherwise list which
// approval ids exist, one POST each. It used to be 403 approval_rejected
// on a request that exists and 404 not_found on an unknown id. The batch
// route answers each item likewise. An approver's own signed token still
// gets 404 for an id that does not exist (TestRespond's "unknown approval").
func TestRespondIsNoOracleForRequestIDs(t *testing.T) {
	f := newApprovalsFixture(t)
	known := f.pendingRefund(t).ApprovalRequestID
	unknown := known[:len(known)-4] + "zzzz" // same shape, no such request
	forged := map[string]func(id string) json.RawMessage{
		"unsigned token with an id": func(string) json.RawMessage { return json.RawMessage(`{"id":"tok-forged"}`) },
		"a non-approver's signed token": func(id string) json.RawMessage {
			// Signed as for the known request, then bound to id.
			return f.token(t, keyMallory, known, "approved", func(k *approval.Token) { k.RequestID = id })
		},
	}
	for name, tok := range forged {
		answers := map[string]string{}
		batch := map[string]string{}
		for _, id := range []string{known, unknown} {
			c, m := f.do(t, "POST", "/approvals/"+id+"/respond", respondBody(tok(id), ""), nil)
			if c == 200 {
				t.Fatalf("%s on %s was accepted: %v", name, id, m)
			}
			answers[id] = fmt.Sprintf("%d %v %v", c, m["error"], m["message"])
			body := fmt.Sprintf(`{"items":[{"approval_id":%q,"token":%s}]}`, id, tok(id))
			c, m = f.do(t, "POST", "/approvals/batch/respond", body, nil)
			if c != 200 {
				t.Fatalf("batch: %d %v", c, m)
			}
			r := m["results"].([]any)[0].(map[string]any)
			batch[id] = fmt.Sprintf("%v %v %v", r["ok"], r["error"], r["message"])
		}
		if answers[known] != answers[unknown] {
			t.Errorf("%s: a request that exists: %s; an id that does not: %s; want one answer (the route is an oracle for which ids exist)",
				name, answers[known], answers[unknown])
		}
		if batch[known] != batch[unknown] {
			t.Errorf("%s, batch item: a request that exists: %s; an id that does not: %s; want one answer",
				name, batch[known], batch[unknown])
		}
	}
}
