package webhook_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/channels/webhook"
	"github.com/chiokernel/chio/policy"
)

const maxAge = 5 * time.Minute

// dedupReceiver is a receiver as the package doc tells one to be: it
// verifies with VerifyDelivery and de-duplicates on the signed delivery
// id, never on X-Chio-Delivery.
type dedupReceiver struct {
	mu   sync.Mutex
	seen map[string]bool
}

// receive reports whether the delivery is new (to act on) or a duplicate.
func (r *dedupReceiver) receive(d delivery, now time.Time) (bool, error) {
	p, err := webhook.VerifyDelivery(d.body, d.header.Get(webhook.HeaderSignature), kernelKey.Public(), now, maxAge)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[p.Delivery] {
		return false, nil
	}
	r.seen[p.Delivery] = true
	return true, nil
}

// The delivery id is inside the signed body, the same for every retry of
// one notification: a body replayed under a fresh X-Chio-Delivery header
// (which is not signed) is still recognised as the delivery it is, and the
// header repeats the body's id.
func TestDeliveryIDIsSigned(t *testing.T) {
	rcv := newReceiver(t, 500, 200)
	c := newChannel(t, policy.Webhook{URL: rcv.URL, Retries: 1})
	const id = "0190abcd-0000-7000-8000-000000000002"
	ctx := channels.WithDeliveryID(context.Background(), id)
	for range 2 { // a retry of the same notification
		_ = c.Deliver(ctx, "approval.requested", sampleRequest())
	}
	got := rcv.deliveries()
	if len(got) != 2 {
		t.Fatalf("%d deliveries", len(got))
	}
	r := &dedupReceiver{seen: map[string]bool{}}
	for i, d := range got {
		p, err := webhook.VerifyDelivery(d.body, d.header.Get(webhook.HeaderSignature), kernelKey.Public(), fixedNow, maxAge)
		if err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
		if p.Delivery != id || d.header.Get(webhook.HeaderDelivery) != id || p.Event != "approval.requested" ||
			p.Approval == nil || p.Approval.ApprovalID != "apr_0190" || p.SentAt != fixedNow.UnixMilli() {
			t.Fatalf("attempt %d: payload %+v, header id %q", i+1, p, d.header.Get(webhook.HeaderDelivery))
		}
		if fresh, err := r.receive(d, fixedNow); err != nil || fresh != (i == 0) {
			t.Fatalf("attempt %d: new = %v, %v; want only the first new", i+1, fresh, err)
		}
	}
	// An attacker replays the captured body under a new header id.
	replay := delivery{header: got[0].header.Clone(), body: got[0].body}
	replay.header.Set(webhook.HeaderDelivery, "0190abcd-0000-7000-8000-00000000ffff")
	if fresh, err := r.receive(replay, fixedNow.Add(time.Minute)); err != nil || fresh {
		t.Fatalf("replayed body with a new header id: new = %v, %v; want a recognised duplicate", fresh, err)
	}
	// Changing the id in the body breaks the signature.
	var m map[string]any
	if err := json.Unmarshal(got[0].body, &m); err != nil {
		t.Fatal(err)
	}
	m["delivery"] = "0190abcd-0000-7000-8000-00000000ffff"
	forged, _ := json.Marshal(m)
	if _, err := r.receive(delivery{header: got[0].header, body: forged}, fixedNow); !errors.Is(err, webhook.ErrBadSignature) {
		t.Fatalf("body with a rewritten delivery id: %v, want ErrBadSignature", err)
	}
}

// VerifyDelivery refuses a genuine body whose sent_at is outside ±maxAge
// (a replay after the window, or a clock far off), a non-positive window,
// and a signed body that is not a delivery; VerifySecretDelivery does the
// same for the shared-secret signature.
func TestVerifyDeliveryFreshness(t *testing.T) {
	t.Setenv("CHIO_TEST_WEBHOOK_SECRET", "s3cret-s3cret-s3cret")
	rcv := newReceiver(t, 200)
	c := newChannel(t, policy.Webhook{URL: rcv.URL, SecretEnv: "CHIO_TEST_WEBHOOK_SECRET"})
	if err := c.Deliver(context.Background(), "approval.resolved", sampleRequest()); err != nil {
		t.Fatal(err)
	}
	d := rcv.deliveries()[0]
	sig, secretSig := d.header.Get(webhook.HeaderSignature), d.header.Get(webhook.HeaderSecretSignature)
	for _, tc := range []struct {
		name string
		now  time.Time
		age  time.Duration
		want error
	}{
		{"just sent", fixedNow, maxAge, nil},
		{"at the edge", fixedNow.Add(maxAge), maxAge, nil},
		{"clock slightly behind", fixedNow.Add(-maxAge), maxAge, nil},
		{"replayed after the window", fixedNow.Add(maxAge + time.Millisecond), maxAge, webhook.ErrStaleDelivery},
		{"an hour later", fixedNow.Add(time.Hour), maxAge, webhook.ErrStaleDelivery},
		{"from the future", fixedNow.Add(-maxAge - time.Millisecond), maxAge, webhook.ErrStaleDelivery},
		{"no window", fixedNow, 0, webhook.ErrStaleDelivery},
		{"negative window", fixedNow, -time.Second, webhook.ErrStaleDelivery},
	} {
		p, err := webhook.VerifyDelivery(d.body, sig, kernelKey.Public(), tc.now, tc.age)
		ps, errS := webhook.VerifySecretDelivery(d.body, secretSig, []byte("s3cret-s3cret-s3cret"), tc.now, tc.age)
		for _, r := range []struct {
			p   *webhook.Payload
			err error
		}{{p, err}, {ps, errS}} {
			if tc.want == nil && (r.err != nil || r.p == nil || r.p.Event != "approval.resolved" || len(r.p.Delivery) != 36) {
				t.Errorf("%s: %+v %v", tc.name, r.p, r.err)
			}
			if tc.want != nil && (!errors.Is(r.err, tc.want) || r.p != nil) {
				t.Errorf("%s: %+v %v, want %v", tc.name, r.p, r.err, tc.want)
			}
		}
	}
	// Wrong key or secret: refused before anything is parsed.
	if _, err := webhook.VerifyDelivery(d.body, sig, otherKey.Public(), fixedNow, maxAge); !errors.Is(err, webhook.ErrBadSignature) {
		t.Errorf("other key: %v", err)
	}
	if _, err := webhook.VerifySecretDelivery(d.body, secretSig, []byte("guess"), fixedNow, maxAge); !errors.Is(err, webhook.ErrBadSignature) {
		t.Errorf("wrong secret: %v", err)
	}
	// Signed by the kernel but not a delivery: no id, no event, not JSON.
	for _, body := range []string{
		`{"event":"approval.requested","approval":null,"sent_at":1750000000123}`,
		`{"delivery":"x","approval":null,"sent_at":1750000000123}`,
		`not json`,
	} {
		sig := hex.EncodeToString(signer(webhook.Domain, []byte(body)))
		if _, err := webhook.VerifyDelivery([]byte(body), sig, kernelKey.Public(), fixedNow, maxAge); !errors.Is(err, webhook.ErrBadDelivery) {
			t.Errorf("%s: %v, want ErrBadDelivery", body, err)
		}
	}
}
