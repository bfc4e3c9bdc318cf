package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// A confirm or ask withdrawn before a human decided (Client.Cancel, or an
// operator) ends "cancelled" with no guard. That is neither a human's no
// nor a policy denial ("cancelled by : reason"): it is ErrCancelled.
func TestConfirmAndAskWithdrawnAreCancelledNotDenied(t *testing.T) {
	const pending = `{"status":"pending_approval","request_id":"req-c","receipt_id":"rc-1","approval_request_id":"ar-c","deadline":1900000000}`
	const cancelled = `{"status":"cancelled","request_id":"req-c","receipt_id":"rc-2","reason":"withdrawn by the agent"}`
	for name, first := range map[string]http.HandlerFunc{
		"awaited":  reply(202, pending),
		"replayed": reply(403, cancelled), // a replay of the request id gets the stored outcome
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{first, reply(200, cancelled)}}
		c := testClient(t, f)
		ok, err := c.Confirm(context.Background(), "Deploy?", nil, WithRequestID("req-c"))
		if ok || !errors.Is(err, ErrCancelled) || errors.Is(err, ErrDenied) {
			t.Fatalf("%s confirm: %v %v; want ErrCancelled, not ErrDenied", name, ok, err)
		}
		f = &fakeChiod{handlers: []http.HandlerFunc{first, reply(200, cancelled)}}
		_, err = testClient(t, f).Ask(context.Background(), "Name?", []Question{{ID: "n", Text: "Name?", Type: "text"}}, WithRequestID("req-c"))
		if !errors.Is(err, ErrCancelled) || errors.Is(err, ErrDenied) || errors.Is(err, ErrDeclined) {
			t.Fatalf("%s ask: %v; want ErrCancelled", name, err)
		}
	}
	// A cancelled call's result says so.
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(403, cancelled)}}
	res, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "req-c"})
	if d, ok := res.(*Denied); err != nil || !ok || d.Status != StatusCancelled {
		t.Fatalf("%#v %v", res, err)
	}
}
