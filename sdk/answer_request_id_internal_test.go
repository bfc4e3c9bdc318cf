package chio

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// chiod's answer to a call, and to a read of one, names the call
// (request_id: kernel.Outcome always carries it). An answer naming another
// call, or none (a proxy or cache that served another request's answer, a
// misrouted load balancer), says nothing about this one: it must never be
// returned as this call's outcome. For CallTool that is ErrOutcomeUnknown
// (ours may have run: retry or Await it under its request id), for Status
// and Await an error; a cancel's answer must be the cancelled call of that
// approval, an approval read that approval (as the Python and TypeScript
// SDKs; call_outcomes.json holds CallTool's cases for all three).
var otherCallAnswers = map[string]string{
	"another call's allow":    `{"status":"allowed","request_id":"req-other","receipt_id":"rc-1","output":{"refund":"re_99"}}`,
	"another call's denial":   `{"status":"denied","request_id":"req-other","reason":"r","guard":"g"}`,
	"another call's pending":  `{"status":"pending_approval","request_id":"req-other","approval_request_id":"ar-1"}`,
	"an allow naming no call": `{"status":"allowed","receipt_id":"rc-1","output":{"refund":"re_99"}}`,
}

func TestReadsRefuseAnotherCallsState(t *testing.T) {
	for name, state := range otherCallAnswers {
		t.Run(name, func(t *testing.T) {
			c := testClient(t, &fakeChiod{handlers: []http.HandlerFunc{reply(200, state)}})
			if r, err := c.Status(context.Background(), "req-t"); err == nil {
				t.Fatalf("Status(req-t) answered with %s: returned %#v, want an error", state, r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r, err := c.Await(ctx, "req-t")
			if err == nil || errors.Is(err, ErrTimedOut) {
				t.Fatalf("Await(req-t) answered with %s: returned %#v, %v; want the answer refused", state, r, err)
			}
		})
	}
}

func TestCancelAnsweredWithAnotherApprovalsCallIsAnError(t *testing.T) {
	other := `{"status":"cancelled","request_id":"req-other","approval_request_id":"ar-other","reason":"stop"}`
	c := testClient(t, &fakeChiod{handlers: []http.HandlerFunc{reply(200, other)}})
	if r, err := c.Cancel(context.Background(), "ar-t", "stop"); err == nil {
		t.Fatalf("cancel of ar-t answered with %s: returned %#v, want an error", other, r)
	}
}

// Await("ar-…") reads the approval to learn its call: an answer that is
// another approval request names another call.
func TestAwaitOfAnApprovalAnsweredWithAnotherRequestIsAnError(t *testing.T) {
	c := testClient(t, &fakeChiod{handlers: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/approvals/") {
			reply(200, `{"request":{"approval_id":"ar-other","request_id":"req-other"}}`)(w, r)
			return
		}
		reply(200, `{"status":"allowed","request_id":"req-other","receipt_id":"rc-1","output":{"refund":"re_99"}}`)(w, r)
	}}})
	if r, err := c.Approval(context.Background(), "ar-t"); err == nil {
		t.Fatalf("Approval(ar-t) returned request %s, want an error", r.ApprovalID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r, err := c.Await(ctx, "ar-t")
	if err == nil || errors.Is(err, ErrTimedOut) {
		t.Fatalf("Await(ar-t) returned %#v, %v; want the answer refused", r, err)
	}
}
