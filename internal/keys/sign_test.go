package keys

import (
	"crypto/ed25519"
	"math/rand/v2"
	"testing"
)

// SignRaw must produce crypto/ed25519's signature, byte for byte (Ed25519
// signing is deterministic, so any difference is a bug), for any key and
// message.
func TestSignRawMatchesStdlib(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for i := range n {
		seed := make([]byte, 32)
		for j := range seed {
			seed[j] = byte(rng.Uint32())
		}
		msg := make([]byte, rng.IntN(300))
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		want := ed25519.Sign(ed25519.NewKeyFromSeed(seed), msg)
		if got := FromSeed(seed).SignRaw(msg); string(got) != string(want) {
			t.Fatalf("case %d: seed %x msg %x: SignRaw %x, crypto/ed25519 %x", i, seed, msg, got, want)
		}
	}
}

// BenchmarkSignRaw: SignRaw against crypto/ed25519.Sign on a receipt-sized
// message.
func BenchmarkSignRaw(b *testing.B) {
	k := FromSeed(make([]byte, 32))
	msg := make([]byte, 700)
	b.Run("SignRaw", func(b *testing.B) {
		for b.Loop() {
			k.SignRaw(msg)
		}
	})
	b.Run("crypto-ed25519", func(b *testing.B) {
		for b.Loop() {
			ed25519.Sign(k.k, msg)
		}
	})
}
