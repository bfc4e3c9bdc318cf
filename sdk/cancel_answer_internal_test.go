package chio

import (
	"context"
	"net/http"
	"testing"
)

// Cancel's answer is the cancelled call. Any other answer — an allowed
// call, a denial, a status this SDK does not know (a newer chiod's), or no
// status at all — is an error, never a Resolution an agent reads as "the
// call was withdrawn", as the Python and TypeScript SDKs' cancel refuse
// it. Before, Go's Cancel returned whatever status came back with a nil
// error: a call that ran (or may still run) passed as cancelled.
func TestCancelRefusesAnAnswerThatIsNotCancelled(t *testing.T) {
	for _, body := range []string{
		`{"status":"allowed","request_id":"req-c","receipt_id":"rc-2","output":{"ok":true},"execution":"succeeded"}`,
		`{"status":"denied","request_id":"req-c","receipt_id":"rc-2","guard":"human-approval","reason":"no"}`,
		`{"status":"cancel_requested","request_id":"req-c","receipt_id":"rc-2"}`,
		`{}`,
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, body)}}
		res, err := testClient(t, f).Cancel(context.Background(), "ar-c", "withdrawn by the agent")
		if err == nil {
			t.Errorf("answer %s: Cancel = %+v, nil; want an error", body, res)
		}
	}
	// The real answer is a Resolution.
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(200,
		`{"status":"cancelled","request_id":"req-c","receipt_id":"rc-2","reason":"withdrawn by the agent","approval_request_id":"ar-c"}`)}}
	res, err := testClient(t, f).Cancel(context.Background(), "ar-c", "withdrawn by the agent")
	if err != nil || res.Status != StatusCancelled || res.RequestID != "req-c" {
		t.Fatalf("%+v %v", res, err)
	}
}
