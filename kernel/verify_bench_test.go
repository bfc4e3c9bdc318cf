package kernel

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/oasisprotocol/curve25519-voi/curve"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
)

// benchProof is a realistic call proof message and its signature.
func benchProof(b *testing.B) (keys.PrivateKey, []byte, []byte) {
	agent := keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
	payload, err := proofPayload("allow-12345", "cap-0198f0c2-7d4e-7a1b-9c3d-5e6f7a8b9c0d", "demo", "echo",
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", time.Now().Unix())
	if err != nil {
		b.Fatal(err)
	}
	msg := signed.Message(CallProofSchema, payload)
	return agent, msg, agent.SignRaw(msg)
}

// BenchmarkProofVerify compares the ways to check one call proof. Only
// "precomputed" is used (verify.go); the others are the measured
// alternatives: the standard library, voi without the precomputed table,
// building the table (once per agent key), and batch verification with
// the per-R subgroup check it would need to keep crypto/ed25519's verdicts.
func BenchmarkProofVerify(b *testing.B) {
	agent, msg, sig := benchProof(b)
	pub := agent.Public()
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(pub.Ed25519(), msg, sig) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("voi", func(b *testing.B) {
		for b.Loop() {
			if !voi.VerifyWithOptions(voi.PublicKey(pub.Ed25519()), msg, sig, stdlibRule) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("precomputed", func(b *testing.B) {
		vk := newVerifyKey(pub)
		for b.Loop() {
			if !vk.verify(msg, sig) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("build-key", func(b *testing.B) {
		for b.Loop() {
			newVerifyKey(pub)
		}
	})
	for _, n := range []int{16, 64} {
		b.Run(fmt.Sprintf("batch%d-cofactored", n), func(b *testing.B) {
			vk := newVerifyKey(pub)
			msgs, sigs := make([][]byte, n), make([][]byte, n)
			for i := range msgs {
				msgs[i] = append([]byte{byte(i)}, msg...)
				sigs[i] = agent.SignRaw(msgs[i])
			}
			opts := &voi.Options{Verify: voi.VerifyOptionsFIPS_186_5}
			for b.Loop() {
				v := voi.NewBatchVerifierWithCapacity(n)
				for i := range msgs {
					v.AddExpandedWithOptions(vk.x, msgs[i], sigs[i], opts)
				}
				if !v.VerifyBatchOnly(nil) {
					b.Fatal("refused")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sig")
		})
	}
	b.Run("R-torsion-free-check", func(b *testing.B) {
		var rc curve.CompressedEdwardsY
		if _, err := rc.SetBytes(sig[:32]); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var r curve.EdwardsPoint
			if _, err := r.SetCompressedY(&rc); err != nil || !r.IsTorsionFree() {
				b.Fatal("R refused")
			}
		}
	})
}
