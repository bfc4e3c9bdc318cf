package kernel_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"filippo.io/edwards25519"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/signed"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// torsionTwin returns the text form of A+T, where A is seed's Ed25519
// public key and T the point of order 2, and a signer for it. Ed25519 as
// Go verifies it (cofactorless: [S]B = R + [k]A') accepts a signature by
// seed's private scalar a under A+T whenever [k]T is the identity, i.e.
// for every other nonce: whoever holds a signs as A and as A+T, two
// different key strings.
func torsionTwin(t *testing.T, seed []byte) (string, func(msg []byte) []byte) {
	t.Helper()
	h := sha512.Sum512(seed)
	a, err := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	if err != nil {
		t.Fatal(err)
	}
	order2, err := hex.DecodeString("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := new(edwards25519.Point).SetBytes(order2)
	if err != nil {
		t.Fatal(err)
	}
	twin := new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(a), tp).Bytes()
	sign := func(msg []byte) []byte {
		for range 256 {
			var nonce [64]byte
			if _, err := rand.Read(nonce[:]); err != nil {
				t.Fatal(err)
			}
			r, _ := new(edwards25519.Scalar).SetUniformBytes(nonce[:])
			R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
			d := sha512.New()
			d.Write(R)
			d.Write(twin)
			d.Write(msg)
			k, _ := new(edwards25519.Scalar).SetUniformBytes(d.Sum(nil))
			S := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
			sig := append(R, S.Bytes()...)
			if ed25519.Verify(twin, msg, sig) {
				return sig
			}
		}
		t.Fatal("no signature verified under the twin key")
		return nil
	}
	return keys.Prefix + hex.EncodeToString(twin), sign
}

const twinQuorumPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
quorum = 2
[[grants.approval.approvers]]
public_key = %q
display_name = "Alice"
[[grants.approval.approvers]]
public_key = %q
display_name = "Bob"
`

// Two approver keys that one private key signs for are one approver: a
// quorum of two needs two people. A public key with a torsion component
// (A+T) is a distinct key string from A, so the policy's duplicate-key
// check let both in, and the kernel counted Alice's two signatures as two
// approvals. Such a key is never the public half of a key chio keygen (or
// any Ed25519 implementation) makes: it is refused wherever a key is
// registered or presented, as small-order keys are.
func TestOnePrivateKeyCannotFillAQuorumOfTwoThroughATorsionTwin(t *testing.T) {
	seed := []byte("alice-alice-alice-alice-alice-32")
	alice := keys.FromSeed(seed)
	twin, signAsTwin := torsionTwin(t, seed)
	text := fmt.Sprintf(twinQuorumPolicy, alice.Public().String(), twin)
	p, err := policy.Parse([]byte(text), "twin.toml")
	if err == nil {
		// What the file lets Alice do alone.
		f := newFixture(t)
		ctx := context.Background()
		f.k.SetPolicy(p)
		f.agent = agentK
		if f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), []string{"deploys"}, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		out, err := f.k.Submit(ctx, f.call(t, "echo", `{"deploy":"prod"}`, ""))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Fatalf("%+v %v", out, err)
		}
		id := out.ApprovalRequestID
		lf := &lf{fixture: f}
		if _, err := f.k.Respond(ctx, id, lf.token(t, id, alice, approval.DecisionApproved, nil), "", ""); err != nil {
			t.Fatal(err)
		}
		req, err := f.k.Approval(id)
		if err != nil {
			t.Fatal(err)
		}
		tok := approval.NewToken(req, alice.Public(), approval.DecisionApproved, f.clock.Now(), 10*time.Minute)
		tok.Approver = twin
		payload, err := canon.Marshal(tok)
		if err != nil {
			t.Fatal(err)
		}
		tok.Signature = hex.EncodeToString(signAsTwin(signed.Message(approval.TokenSchema, payload)))
		raw, err := canon.Marshal(tok)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.k.Respond(ctx, id, raw, "", "")
		t.Fatalf("a policy naming %s and its torsion twin %s as two approvers was accepted; Alice's second signature then answered %+v, %v "+
			"(outcome approved: one private key met quorum 2)", alice.Public(), twin, res, err)
	}
	if !strings.Contains(err.Error(), "twin.toml:18") || !strings.Contains(err.Error(), "torsion") {
		t.Fatalf("refused, but not at Bob's public_key (line 18) for its torsion: %v", err)
	}
}
