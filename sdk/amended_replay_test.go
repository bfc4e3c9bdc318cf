package chio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	chio "github.com/chiokernel/chio/sdk"
)

// A human approved an edited call (450 -> 300). An agent that reads it
// with Status gets an *Allowed whose Output is the amended call's: the
// result must say the tool ran with other arguments than the agent's, as
// the Python and TypeScript SDKs' Allowed do (approval.amended_arguments).
// Before, Go's Allowed had no field for it: the agent read the output of a
// 300 refund as the outcome of its 450 one. CallTool's replay of the same
// id must say it too (before, chiod's answer to the replay had no
// "approval").
func TestAllowedReportsAmendedArguments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := chio.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	call := refund()
	call.RequestID = "amended-" + time.Now().Format("150405.000000000")
	res, err := client.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := res.(*chio.PendingApproval)
	if !ok {
		t.Fatalf("want a pending approval, got %#v", res)
	}
	amended := `{"amount":300,"currency":"USD","customer_id":"cust-9012"}`
	approve(p.ApprovalID, chio.WithAmendment(json.RawMessage(amended)))
	if _, err := client.Await(ctx, call.RequestID); err != nil {
		t.Fatal(err)
	}

	status, err := client.Status(ctx, call.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	// The agent's retry of the same id (an idempotent replay) says so too.
	replay, err := client.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]chio.Result{"Status": status, "CallTool replay": replay} {
		a, ok := r.(*chio.Allowed)
		if !ok {
			t.Fatalf("%s: want *Allowed, got %#v", name, r)
		}
		if !a.Amended || !bytes.Equal(a.AmendedArguments, []byte(amended)) || a.ApprovalID != p.ApprovalID {
			t.Errorf("%s: Allowed{Output: %s} does not say it ran with the amended arguments %s: Amended %v, AmendedArguments %q, ApprovalID %q",
				name, a.Output, amended, a.Amended, a.AmendedArguments, a.ApprovalID)
		}
	}
}
