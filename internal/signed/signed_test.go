package signed

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/keys"
)

func testKey(t testing.TB) keys.PrivateKey {
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	return keys.FromSeed(seed)
}

type obj struct {
	Schema string         `json:"schema"`
	Zeta   string         `json:"zeta"`
	Alpha  int            `json:"alpha"`
	Meta   map[string]any `json:"meta"`
}

// The golden file pins the exact bytes: a change to canonicalization, the
// domain rule or member splicing shows up here first.
func TestGoldenSignature(t *testing.T) {
	k := testKey(t)
	got, err := Sign(k, "chio.receipt.v1", obj{Schema: "chio.receipt.v1", Zeta: "z", Alpha: 7, Meta: map[string]any{"b": 1, "a": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/receipt-like.golden.json")
	if os.IsNotExist(err) && os.Getenv("CHIO_UPDATE_GOLDEN") == "1" {
		os.WriteFile("testdata/receipt-like.golden.json", got, 0o644)
		t.Skip("golden written")
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.TrimSpace(string(want)) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// The stored bytes are themselves canonical.
	c, _ := canon.Canonicalize(got)
	if string(c) != string(got) {
		t.Fatal("signed bytes not canonical")
	}
	if err := Verify(got, "chio.receipt.v1", k.Public()); err != nil {
		t.Fatal(err)
	}
	// Independently recompute: Ed25519 over DOMAIN||0x00||JCS(without signature).
	payload := `{"alpha":7,"meta":{"a":"x","b":1},"schema":"chio.receipt.v1","zeta":"z"}`
	sig := ed25519.Sign(ed25519.NewKeyFromSeed(seedOf(t)), append([]byte("chio.receipt.v1\x00"), payload...))
	if !strings.Contains(string(got), `"signature":"`+hex.EncodeToString(sig)+`"`) {
		t.Fatal("signature is not over DOMAIN||0x00||JCS")
	}
}

func seedOf(t *testing.T) []byte {
	s, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	return s
}

func TestVerifyReceivedBytesNotReserialized(t *testing.T) {
	k := testKey(t)
	signedBytes, _ := Sign(k, "chio.capability.v1", map[string]any{"schema": "chio.capability.v1", "a": 1})
	// Whitespace and member order in transit do not matter: JCS of what we got.
	reordered := strings.Replace(string(signedBytes), `{"a":1,`, `{ "a" : 1.0 ,`, 1)
	if err := Verify([]byte(reordered), "chio.capability.v1", k.Public()); err != nil {
		t.Fatalf("semantically equal bytes rejected: %v", err)
	}
}

func TestVerifyRejections(t *testing.T) {
	k := testKey(t)
	other, _ := keys.Generate(strings.NewReader(strings.Repeat("x", 64)))
	good, _ := Sign(k, "chio.approval-token.v1", map[string]any{"schema": "chio.approval-token.v1", "decision": "approved"})
	flip := []byte(strings.Replace(string(good), "approved", "denied", 1))
	sigAt := strings.Index(string(good), `"signature":"`) + len(`"signature":"`)
	badSig := []byte(string(good[:sigAt]) + "0" + string(good[sigAt+1:]))
	if good[sigAt] == '0' {
		badSig = []byte(string(good[:sigAt]) + "1" + string(good[sigAt+1:]))
	}
	// Malleability: S + L is a different encoding of the same signature.
	cases := []struct {
		name   string
		raw    []byte
		domain string
		key    keys.PublicKey
		want   error
	}{
		{"tampered field", flip, "chio.approval-token.v1", k.Public(), ErrBadSignature},
		{"wrong key", good, "chio.approval-token.v1", other.Public(), ErrBadSignature},
		{"wrong domain", good, "chio.receipt.v1", k.Public(), ErrWrongSchema},
		{"bad signature hex digit", badSig, "chio.approval-token.v1", k.Public(), ErrBadSignature},
		{"no signature", []byte(`{"schema":"chio.approval-token.v1"}`), "chio.approval-token.v1", k.Public(), ErrMissingSignature},
		{"uppercase signature hex", []byte(string(good[:sigAt]) + strings.ToUpper(string(good[sigAt:sigAt+128])) + string(good[sigAt+128:])), "chio.approval-token.v1", k.Public(), ErrMissingSignature},
		{"duplicate key", []byte(strings.Replace(string(good), `{`, `{"decision":"denied",`, 1)), "chio.approval-token.v1", k.Public(), canon.ErrDuplicateKey},
		{"zero key", good, "chio.approval-token.v1", keys.PublicKey{}, ErrBadSignature},
		{"not object", []byte(`[1]`), "chio.approval-token.v1", k.Public(), ErrNotObject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Verify(c.raw, c.domain, c.key); !errors.Is(err, c.want) {
				t.Fatalf("got %v want %v", err, c.want)
			}
		})
	}
}

func TestSignRefusesExistingSignatureAndWrongSchema(t *testing.T) {
	k := testKey(t)
	if _, err := Sign(k, "d", map[string]any{"signature": "x"}); err == nil {
		t.Fatal("signed an object with a signature member")
	}
	if _, err := Sign(k, "chio.receipt.v1", map[string]any{"schema": "chio.capability.v1"}); !errors.Is(err, ErrWrongSchema) {
		t.Fatalf("got %v", err)
	}
	// Empty object and object whose names all sort before "signature".
	for _, o := range []map[string]any{{}, {"a": 1}, {"z": 1}} {
		b, err := Sign(k, "d", o)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(b, "d", k.Public()); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	k := keys.FromSeed(make([]byte, 32))
	good, _ := Sign(k, "chio.call.v1", map[string]any{"request_id": "r1", "issued_at": 5})
	f.Add(good)
	f.Add([]byte(`{"signature":"00"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if Verify(raw, "chio.call.v1", k.Public()) == nil {
			// Anything that verifies must carry the same payload as good.
			m1, _, _ := Split(raw, "chio.call.v1")
			m2, _, _ := Split(good, "chio.call.v1")
			if string(m1) != string(m2) {
				t.Fatalf("forged payload verified: %s", raw)
			}
		}
	})
}
