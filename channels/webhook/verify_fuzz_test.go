package webhook_test

import (
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/chiokernel/chio/channels/webhook"
)

// FuzzVerifyDelivery: a receiver's VerifyDelivery (Ed25519) and
// VerifySecretDelivery (shared secret) accept a body the kernel signed
// exactly when it names an event and a delivery id and its sent_at is
// within maxAge of now, either way; what they return is the payload as
// signed; and FreshUntil is the last instant either accepts it. The
// fuzzer chooses the payload's fields and the receiver's clock skew.
func FuzzVerifyDelivery(f *testing.F) {
	f.Add("approval.requested", "dl-1", int64(0), int64(0), false)
	f.Add("approval.resolved", "dl-2", int64(-300_000), int64(0), true)
	f.Add("approval.resolved", "dl-2", int64(300_001), int64(0), false)
	f.Add("", "dl-3", int64(0), int64(0), false)
	f.Add("approval.requested", "", int64(0), int64(5), true)
	f.Add("e\xff", "d", int64(-1<<62), int64(1<<62), false)
	f.Fuzz(func(t *testing.T, event, delivery string, sentOffMs, skewMs int64, withApproval bool) {
		const maxAge = 5 * time.Minute
		p := webhook.Payload{Event: event, Delivery: delivery, SentAt: fixedNow.UnixMilli() + sentOffMs%(1<<50)}
		if withApproval {
			p.Approval = sampleRequest()
		}
		body, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var sent webhook.Payload
		if err := json.Unmarshal(body, &sent); err != nil {
			t.Fatal(err)
		}
		now := fixedNow.Add(time.Duration(skewMs%(1<<40)) * time.Millisecond)
		age := now.Sub(time.UnixMilli(sent.SentAt))
		want := sent.Event != "" && sent.Delivery != "" && age <= maxAge && age >= -maxAge
		secretKey := []byte("0123456789abcdef0123456789abcdef")
		sig := hex.EncodeToString(signer(webhook.Domain, body))
		for name, verify := range map[string]func(time.Time) (*webhook.Payload, error){
			"ed25519": func(at time.Time) (*webhook.Payload, error) {
				return webhook.VerifyDelivery(body, sig, kernelKey.Public(), at, maxAge)
			},
			"secret": func(at time.Time) (*webhook.Payload, error) {
				return webhook.VerifySecretDelivery(body, webhook.SecretSignature(secretKey, body), secretKey, at, maxAge)
			},
		} {
			got, err := verify(now)
			if (err == nil) != want {
				t.Fatalf("%s: %v, want accepted=%v (age %s)\n%s", name, err, want, age, body)
			}
			if err != nil {
				continue
			}
			if !reflect.DeepEqual(*got, sent) {
				t.Fatalf("%s: returned %+v, signed %+v", name, got, sent)
			}
			until := got.FreshUntil(maxAge)
			if _, err := verify(until); err != nil {
				t.Fatalf("%s: refused at FreshUntil: %v", name, err)
			}
			if _, err := verify(until.Add(time.Millisecond)); err == nil {
				t.Fatalf("%s: accepted after FreshUntil", name)
			}
		}
		if _, err := webhook.VerifyDelivery(body, sig, otherKey.Public(), now, maxAge); err == nil {
			t.Fatal("verified with another kernel's key")
		}
	})
}
