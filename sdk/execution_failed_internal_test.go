package chio

import (
	"context"
	"net/http"
	"testing"
)

// An allowed call whose execution is not "succeeded" did not succeed, even
// when the answer carries no tool_error: a broken or lying server, or a
// newer chiod's execution this SDK does not know. Failed must say so, as
// the Python and TypeScript SDKs' `failed` do; before, Go's Failed looked
// at ToolError alone and presented a call that may have run ("unknown") as
// a success whose Output could be used.
func TestAllowedFailedFollowsExecution(t *testing.T) {
	for execution, want := range map[string]bool{
		"succeeded":     false,
		"":              false, // an older chiod that does not say
		"tool_error":    true,
		"not_delivered": true,
		"unknown":       true,
		"partially_run": true, // a value from a newer chiod: fail closed
	} {
		body := `{"status":"allowed","request_id":"r-1","receipt_id":"rc-1","output":{"ok":true}`
		if execution != "" {
			body += `,"execution":"` + execution + `"`
		}
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, body+"}")}}
		res, err := testClient(t, f).CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "r-1"})
		a, ok := res.(*Allowed)
		if err != nil || !ok {
			t.Fatalf("execution %q: %#v %v; want *Allowed", execution, res, err)
		}
		if a.Failed() != want || a.Execution != execution {
			t.Errorf("execution %q, no tool_error: Failed() = %v, want %v (Execution %q)", execution, a.Failed(), want, a.Execution)
		}
	}
}
