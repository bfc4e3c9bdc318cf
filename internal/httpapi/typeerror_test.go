package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// A body of the wrong shape gets a 400 that says which field is wrong and
// what it should be, in JSON's words. Before, the message was
// encoding/json's, naming chiod's Go types ("Go value of type
// kernel.ToolCall", "Go struct field RespondRequest.reason"): internal
// detail, and no help to a client that does not read Go.
func TestWrongJSONTypesAreExplainedInJSONTerms(t *testing.T) {
	f := newApprovalsFixture(t)
	for _, c := range []struct{ path, body, want string }{
		{"/v1/calls", `[]`, "want an object"},
		{"/v1/calls", `{"request_id":7}`, `"request_id"`},
		{"/approvals/ar-x/respond", `{"reason":1}`, `"reason": want a string`},
		{"/approvals/ar-x/cancel", `"no"`, "want an object"},
		{"/approvals/batch/respond", `{"items":[{"approval_id":["x"]}]}`, `"items.0.approval_id": want a string`},
		{"/v1/session", `{"public_key":{}}`, `"public_key": want a string`},
	} {
		code, m := f.do(t, http.MethodPost, c.path, c.body, nil)
		msg, _ := m["message"].(string)
		if code != http.StatusBadRequest || m["error"] != "bad_request" {
			t.Errorf("POST %s %s: %d %v, want 400 bad_request", c.path, c.body, code, m)
		}
		for _, leak := range []string{"Go ", "kernel.", "httpapi.", "struct"} {
			if strings.Contains(msg, leak) {
				t.Errorf("POST %s %s: message names Go internals (%q): %s", c.path, c.body, leak, msg)
			}
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("POST %s %s: message %q does not say %s", c.path, c.body, msg, c.want)
		}
	}
}
