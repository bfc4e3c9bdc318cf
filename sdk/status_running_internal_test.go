package chio

import (
	"context"
	"net/http"
	"testing"
)

// Status of a call that was allowed outright and whose tool is still
// running (chiod: "dispatching", no approval id) is a PendingApproval
// with Running set, and the documented switch — Await(p.RequestID) —
// finishes it. Await("") (the empty ApprovalID) would be a bad request.
func TestStatusOfARunningCallWithoutAHumanAwaitsByRequestID(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{
		reply(200, `{"status":"dispatching","request_id":"run-5:deploy","receipt_id":"rc-1"}`),
		reply(200, `{"status":"allowed","request_id":"run-5:deploy","receipt_id":"rc-1","output":{"ok":true},"execution":"succeeded"}`),
	}}
	c := testClient(t, f)
	res, err := c.Status(context.Background(), "run-5:deploy")
	p, ok := res.(*PendingApproval)
	if err != nil || !ok || !p.Running || p.ApprovalID != "" || p.RequestID != "run-5:deploy" {
		t.Fatalf("%#v %v; want a Running PendingApproval with no approval id", res, err)
	}
	done, err := c.Await(context.Background(), p.RequestID)
	if err != nil || done.Status != StatusAllowed || string(done.Output) != `{"ok":true}` {
		t.Fatalf("%+v %v", done, err)
	}
}

// A call parked for a human is not Running; an approved one whose tool
// runs is, and keeps its approval id.
func TestStatusTellsAHumanWaitFromARunningTool(t *testing.T) {
	for body, want := range map[string]bool{
		`{"status":"pending_approval","request_id":"r-1","approval_request_id":"ar-1","deadline":1900000000}`: false,
		`{"status":"dispatching","request_id":"r-1","approval_request_id":"ar-1"}`:                            true,
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, body)}}
		res, err := testClient(t, f).Status(context.Background(), "r-1")
		p, ok := res.(*PendingApproval)
		if err != nil || !ok || p.Running != want || p.ApprovalID != "ar-1" {
			t.Fatalf("%s: %#v %v; want Running=%v", body, res, err, want)
		}
	}
}
