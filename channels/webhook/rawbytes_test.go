package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/policy"
)

// A receiver gets a request's arguments and intent as the tool receives
// them: VerifyDelivery hands back the very bytes parameter_hash covers.
// encoding/json's default HTML escaping would sign and send "<" as \u003c.
func TestDeliveryKeepsTheArgumentsBytes(t *testing.T) {
	rcv := newReceiver(t, 204)
	c := newChannel(t, policy.Webhook{URL: rcv.URL + "/hook"})
	req := sampleRequest()
	req.Arguments = json.RawMessage("{\"memo\":\"<a> & b\u2028\"}")
	req.GovernedIntent = json.RawMessage(`{"purpose":"refund <A&B>"}`)
	if err := c.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	got := rcv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	p, err := webhook.VerifyDelivery(got[0].body, got[0].header.Get(webhook.HeaderSignature), kernelKey.Public(), fixedNow, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Approval.Arguments) != string(req.Arguments) || string(p.Approval.GovernedIntent) != string(req.GovernedIntent) {
		t.Fatalf("the receiver got arguments %s and intent %s; the tool receives %s and %s",
			p.Approval.Arguments, p.Approval.GovernedIntent, req.Arguments, req.GovernedIntent)
	}
}
