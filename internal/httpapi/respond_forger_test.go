package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestRespondTellsAForgerNothingOfTheDecision: on POST /approvals/{id}/respond
// the signed token is the only credential. A token that is not a trusted
// approver's — unsigned, or signed by a key that may not decide the
// request — must be refused the same way whatever became of the request:
// reading how a request ended takes a reader token, an approver session or
// the agent's own proof (SPEC §6), not a key anyone can generate. It used
// to be answered 409 "conflicting state: request is approved" (or denied)
// once the request was decided, and 403 while it was pending.
func TestRespondTellsAForgerNothingOfTheDecision(t *testing.T) {
	f := newApprovalsFixture(t)
	decide := func(decision string) string {
		t.Helper()
		out := f.pendingRefund(t)
		if decision != "" {
			id := out.ApprovalRequestID
			if c, m := f.do(t, "POST", "/approvals/"+id+"/respond", respondBody(f.token(t, keyAlice, id, decision, nil), ""), nil); c != 200 {
				t.Fatalf("deciding %s: %d %v", id, c, m)
			}
		}
		return out.ApprovalRequestID
	}
	states := map[string]string{"pending": decide(""), "approved": decide("approved"), "denied": decide("denied")}
	forged := map[string]func(id string) json.RawMessage{
		"unsigned token with an id": func(string) json.RawMessage { return json.RawMessage(`{"id":"tok-forged"}`) },
		"a non-approver's signed token": func(id string) json.RawMessage {
			return f.token(t, keyMallory, id, "approved", nil)
		},
	}
	for name, tok := range forged {
		answers := map[string]string{}
		for state, id := range states {
			c, m := f.do(t, "POST", "/approvals/"+id+"/respond", respondBody(tok(id), ""), nil)
			answers[state] = fmt.Sprintf("%d %v %v", c, m["error"], m["message"])
			if c == 200 {
				t.Fatalf("%s on a %s request was accepted: %v", name, state, m)
			}
		}
		for state, a := range answers {
			if a != answers["pending"] {
				t.Errorf("%s on the %s request: %s; want the answer it gets on a pending one (%s): the refusal tells who holds no credential how the request ended",
					name, state, a, answers["pending"])
			}
		}
	}
}
