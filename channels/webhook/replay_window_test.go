package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/policy"
)

// A receiver that remembers delivery ids for maxAge from when it first sees
// them, as the docs used to say was enough, accepts a captured body twice
// when its clock is behind the kernel's: VerifyDelivery accepts a body
// from sent_at − maxAge (receiver time) to sent_at + maxAge, a span of up
// to 2×maxAge. Payload.FreshUntil says when VerifyDelivery stops
// accepting this body; a receiver that remembers the id until then
// refuses every replay.
func TestReplayWithinTheWindowAfterTheFirstSighting(t *testing.T) {
	rcv := newReceiver(t, 200)
	c := newChannel(t, policy.Webhook{URL: rcv.URL})
	if err := c.Deliver(context.Background(), "approval.requested", sampleRequest()); err != nil {
		t.Fatal(err)
	}
	d := rcv.deliveries()[0]
	sig := d.header.Get(webhook.HeaderSignature)
	sent := fixedNow // the kernel's clock when it sent the body

	// The receiver's clock is 3/4 of the window behind the kernel's.
	first := sent.Add(-maxAge * 3 / 4)
	p, err := webhook.VerifyDelivery(d.body, sig, kernelKey.Public(), first, maxAge)
	if err != nil {
		t.Fatal(err)
	}
	until := p.FreshUntil(maxAge)
	if !until.Equal(sent.Add(maxAge)) {
		t.Fatalf("FreshUntil = %s, want sent_at + maxAge = %s", until, sent.Add(maxAge))
	}
	// Past "maxAge after the first sighting" the captured body still
	// verifies: an id forgotten then would let it in a second time.
	replay := first.Add(maxAge + time.Minute)
	if _, err := webhook.VerifyDelivery(d.body, sig, kernelKey.Public(), replay, maxAge); err != nil {
		t.Fatalf("the replay %s after the first sighting: %v", replay.Sub(first), err)
	}
	if !replay.Before(until) {
		t.Fatalf("a receiver remembering the id until %s would have forgotten it at the replay (%s)", until, replay)
	}
	// Up to FreshUntil the body verifies, past it never: remembering the id
	// until then is enough.
	if _, err := webhook.VerifyDelivery(d.body, sig, kernelKey.Public(), until, maxAge); err != nil {
		t.Fatalf("at FreshUntil: %v", err)
	}
	if _, err := webhook.VerifyDelivery(d.body, sig, kernelKey.Public(), until.Add(time.Millisecond), maxAge); err == nil {
		t.Fatal("the body verifies after FreshUntil")
	}
}
