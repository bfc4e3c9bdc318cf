package chio

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// A human approved an edited call and a guard then denied the edit when it
// resumed (a forbidden path in the approver's arguments). The Denied an
// agent reads with Status (or a CallTool replay) must say which approval
// it waited for and that the arguments denied were the approver's, not
// its own, as the Python and TypeScript SDKs' ToolDenied do
// (approval_request_id, approval.amended_arguments) and as Await's
// Resolution does. Before, Go's Denied dropped both: the agent "fixed"
// arguments that were never the ones refused.
func TestDeniedReportsTheApprovalAndItsAmendment(t *testing.T) {
	const amended = `{"path":"/etc/shadow"}`
	body := `{"status":"denied","request_id":"r-1","receipt_id":"rc-2","guard":"forbidden_paths","reason":"path is forbidden",` +
		`"approval_request_id":"ar-1","approval":{"status":"approved","approvals":1,"quorum":1,"approver":"ed25519:abc",` +
		`"note":"use this one","amended":true,"amended_arguments":` + amended + `}}`
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, body)}}
	res, err := testClient(t, f).Status(context.Background(), "r-1")
	d, ok := res.(*Denied)
	if err != nil || !ok {
		t.Fatalf("%#v %v; want *Denied", res, err)
	}
	if d.ApprovalID != "ar-1" || !bytes.Equal(d.AmendedArguments, []byte(amended)) {
		t.Fatalf("Denied %+v does not say it was the approver's amended call %s (approval ar-1) that was denied", d, amended)
	}
}
