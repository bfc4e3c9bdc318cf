package chio

import (
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
)

// The SDK restates the Chio-Proof format rather than link the server; this
// pins the two together.
func TestStatusProofVerifiesWithServer(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	at := time.Unix(1_800_000_000, 0)
	for _, id := range []string{"req-1", "ar-0190f0e0-0000-7000-8000-000000000000", `odd "quoted" id`} {
		h := signStatusProof(k, id, at)
		if err := httpapi.VerifyStatusProof(h, k.Public(), id, at); err != nil {
			t.Errorf("%q: %v", id, err)
		}
		if err := httpapi.VerifyStatusProof(h, k.Public(), id+"x", at); err == nil {
			t.Errorf("%q: proof verified for another id", id)
		}
	}
}

// The cancel proof is pinned to the server's verifier too, and a read
// proof (or a proof for another reason) cannot cancel.
func TestCancelProofVerifiesWithServer(t *testing.T) {
	k := keys.FromSeed(make([]byte, 32))
	at := time.Unix(1_800_000_000, 0)
	id := "ar-0190f0e0-0000-7000-8000-000000000000"
	h := signCancelProof(k, id, "customer withdrew", at)
	if err := httpapi.VerifyCancelProof(h, k.Public(), id, "customer withdrew", at); err != nil {
		t.Fatal(err)
	}
	if err := httpapi.VerifyCancelProof(h, k.Public(), id, "another reason", at); err == nil {
		t.Error("cancel proof verified for another reason")
	}
	if err := httpapi.VerifyCancelProof(signStatusProof(k, id, at), k.Public(), id, "customer withdrew", at); err == nil {
		t.Error("a read proof cancelled")
	}
	if err := httpapi.VerifyStatusProof(h, k.Public(), id, at); err == nil {
		t.Error("a cancel proof read a call")
	}
}
