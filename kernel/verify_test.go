package kernel

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"filippo.io/edwards25519"
	lru "github.com/hashicorp/golang-lru/v2"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/chiokernel/chio/internal/keys"
)

// A signature vector: key, message, signature, and what its source says.
type sigVector struct {
	name          string
	key, msg, sig []byte
	flags         []string
	valid         *bool // the source's expected verdict, when it gives one
}

// oldRule is the acceptance rule before precomputed keys: keys.PublicKey's
// parse, then crypto/ed25519.Verify.
func oldRule(key, msg, sig []byte) bool {
	pub, err := keys.PublicKeyFromBytes(key)
	return err == nil && len(sig) == ed25519.SignatureSize && ed25519.Verify(pub.Ed25519(), msg, sig)
}

// newRule is the kernel's rule now: the same parse, then verify.go.
func newRule(key, msg, sig []byte) bool {
	pub, err := keys.PublicKeyFromBytes(key)
	return err == nil && newVerifyKey(pub).verify(msg, sig)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func loadWycheproof(t *testing.T, file string) []sigVector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "ed25519", file))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		PK string `json:"pk"`
	}
	var f struct {
		NumberOfTests int `json:"numberOfTests"`
		TestGroups    []struct {
			PublicKey *key `json:"publicKey"` // testvectors_v1
			Key       *key `json:"key"`       // v0
			Tests     []struct {
				TcID   int      `json:"tcId"`
				Msg    string   `json:"msg"`
				Sig    string   `json:"sig"`
				Result string   `json:"result"`
				Flags  []string `json:"flags"`
			} `json:"tests"`
		} `json:"testGroups"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	var out []sigVector
	for _, g := range f.TestGroups {
		k := g.PublicKey
		if k == nil {
			k = g.Key
		}
		for _, tc := range g.Tests {
			if tc.Result != "valid" && tc.Result != "invalid" {
				t.Fatalf("%s #%d: result %q", file, tc.TcID, tc.Result)
			}
			valid := tc.Result == "valid"
			out = append(out, sigVector{name: file + "#" + itoa(tc.TcID), key: mustHex(t, k.PK),
				msg: mustHex(t, tc.Msg), sig: mustHex(t, tc.Sig), flags: tc.Flags, valid: &valid})
		}
	}
	if len(out) != f.NumberOfTests {
		t.Fatalf("%s: read %d tests, file says %d", file, len(out), f.NumberOfTests)
	}
	return out
}

func loadCCTV(t *testing.T) []sigVector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "ed25519", "cctv_ed25519vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f []struct {
		Number int      `json:"number"`
		Key    string   `json:"key"`
		Sig    string   `json:"sig"`
		Msg    string   `json:"msg"`
		Flags  []string `json:"flags"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	out := make([]sigVector, 0, len(f))
	for _, v := range f {
		// The CCTV README: Go (ref10 behaviour) refuses exactly the
		// vectors flagged non_canonical_R or low_order_residue.
		valid := !slices.Contains(v.Flags, "non_canonical_R") && !slices.Contains(v.Flags, "low_order_residue")
		out = append(out, sigVector{name: "cctv#" + itoa(v.Number), key: mustHex(t, v.Key),
			msg: []byte(v.Msg), sig: mustHex(t, v.Sig), flags: v.Flags, valid: &valid})
	}
	return out
}

func itoa(i int) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// TestVerifierMatchesStdlibOnVectors is the proof that precomputed keys
// changed nothing: on every Wycheproof and CCTV vector the kernel's verdict
// (key parse + verify.go) equals the old one (key parse + crypto/ed25519),
// and, below the key parse, voi's verdict equals crypto/ed25519's even for
// keys the kernel never accepts.
func TestVerifierMatchesStdlibOnVectors(t *testing.T) {
	var all []sigVector
	for _, f := range []string{"wycheproof_ed25519_test.json", "wycheproof_eddsa_test.json"} {
		all = append(all, loadWycheproof(t, f)...)
	}
	all = append(all, loadCCTV(t)...)
	var accepted, keyRefused int
	for _, v := range all {
		old, now := oldRule(v.key, v.msg, v.sig), newRule(v.key, v.msg, v.sig)
		if old != now {
			t.Errorf("%s %v: kernel verdict %v, crypto/ed25519 path %v", v.name, v.flags, now, old)
		}
		if old {
			accepted++
		}
		if len(v.key) != ed25519.PublicKeySize {
			keyRefused++
			continue
		}
		std := ed25519.Verify(v.key, v.msg, v.sig)
		// The source's expected verdict is crypto/ed25519's (a check that
		// the vectors were read right).
		if v.valid != nil && std != *v.valid {
			t.Errorf("%s %v: crypto/ed25519 says %v, the vector expects %v", v.name, v.flags, std, *v.valid)
		}
		if _, err := keys.PublicKeyFromBytes(v.key); err != nil {
			keyRefused++
		}
		if got := rawVerify(v.key, v.msg, v.sig); got != std {
			t.Errorf("%s %v: voi (StdLib preset, expanded key) says %v, crypto/ed25519 %v", v.name, v.flags, got, std)
		}
	}
	if len(all) != 151+145+914 {
		t.Fatalf("read %d vectors", len(all))
	}
	t.Logf("%d vectors: %d accepted by both rules, %d keys refused at parse", len(all), accepted, keyRefused)
}

// rawVerify is the verifier without the kernel's key parse in front of it
// (so weak and non-canonical keys reach voi too).
func rawVerify(key, msg, sig []byte) bool {
	x, err := newExpanded(key)
	if err != nil {
		return false
	}
	return verifyKey{x: x}.verify(msg, sig)
}

// TestVerifierMatchesStdlibOnMutations: random keys and messages, valid
// signatures and mutated ones (flipped bits, S+ℓ, R and A shifted by
// torsion points), the two verdicts agree on every one.
func TestVerifierMatchesStdlibOnMutations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 600
	}
	var accepted [6]int
	for i := 0; i < n; i++ {
		seed := make([]byte, 32)
		for j := range seed {
			seed[j] = byte(rng.Uint32())
		}
		msg := make([]byte, rng.IntN(200))
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		m := i % 6
		key, sig := mutatedSignature(rng, seed, msg, m)
		old, now := oldRule(key, msg, sig), newRule(key, msg, sig)
		if old != now {
			t.Fatalf("case %d: key %x msg %x sig %x: kernel %v, crypto/ed25519 path %v", i, key, msg, sig, now, old)
		}
		if (m == 4 || m == 5) && old {
			t.Fatalf("case %d: key %x has a torsion component, yet the key parse took it", i, key)
		}
		// The mutations are judged by crypto/ed25519 alone (the key parse
		// refuses mixed-order keys; rawVerify below holds voi to it on them).
		if ed25519.Verify(key, msg, sig) {
			accepted[m]++
		}
		// A torsioned R is exactly what a cofactored (or batch) verifier
		// would accept and the rule refuses: the test can tell them apart.
		if m == 3 && !voi.VerifyWithOptions(key, msg, sig, &voi.Options{Verify: voi.VerifyOptionsFIPS_186_5}) {
			t.Fatalf("case %d: a cofactored verifier refuses R+T too; the mutation tests nothing", i)
		}
		if raw, std := rawVerify(key, msg, sig), ed25519.Verify(key, msg, sig); raw != std {
			t.Fatalf("case %d: key %x msg %x sig %x: voi %v, crypto/ed25519 %v", i, key, msg, sig, raw, std)
		}
	}
	// The mutations do what they claim: untouched and torsion-compensated
	// signatures pass, flipped S, S+ℓ and a torsioned R under a clean key
	// never do, and an uncompensated mixed-order key passes about 1 in 8.
	per := n / 6
	if accepted[0] != per || accepted[5] != per || accepted[2] != 0 || accepted[3] != 0 ||
		accepted[1] > per/50 || accepted[4] == 0 || accepted[4] > per/4 {
		t.Fatalf("accepted per mutation %v of %d each", accepted, per)
	}
	t.Logf("accepted per mutation (none, bit flip, S+ℓ, R+T, mixed A, mixed A compensated): %v of %d each", accepted, per)
}

// torsion8 is a point of order 8 (CCTV's list of low-order encodings).
var torsion8 = func() *edwards25519.Point {
	b, _ := hex.DecodeString("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05")
	p, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		panic(err)
	}
	return p
}()

// mutatedSignature signs msg under seed's key and applies mutation m:
// 0 none, 1 flip a bit, 2 S+ℓ, 3 R+T under a clean key, 4 key A+T with an honest-looking
// signature for it (valid cofactorless only when k·T = 0), 5 key A+T with R
// compensated (valid under both rules).
func mutatedSignature(rng *rand.Rand, seed, msg []byte, m int) (key, sig []byte) {
	priv := ed25519.NewKeyFromSeed(seed)
	key, sig = []byte(priv.Public().(ed25519.PublicKey)), ed25519.Sign(priv, msg)
	switch m {
	case 1:
		sig[rng.IntN(64)] ^= 1 << rng.IntN(8)
	case 2:
		s, _ := new(edwards25519.Scalar).SetCanonicalBytes(sig[32:])
		// S+ℓ as a 256-bit little-endian integer: not reduced, must fail.
		var l = [32]byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 31: 0x10}
		sb := s.Bytes()
		var carry uint16
		for i := range 32 {
			v := uint16(sb[i]) + uint16(l[i]) + carry
			sig[32+i], carry = byte(v), v>>8
		}
	case 3:
		key, sig = torsionedRSignature(seed, msg)
	case 4, 5:
		key, sig = mixedOrderSignature(seed, msg, m == 5)
	}
	return key, sig
}

// torsionedRSignature signs msg under a clean key A = aB with R = rB + T
// and S = r + k·a: [S]B − [k]A = rB ≠ R, so the cofactorless rule refuses
// it, while [8]([S]B − [k]A − R) = −[8]T = 0 passes a cofactored check.
func torsionedRSignature(seed, msg []byte) (key, sig []byte) {
	h := sha512Sum(seed)
	a, _ := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	key = new(edwards25519.Point).ScalarBaseMult(a).Bytes()
	r, _ := new(edwards25519.Scalar).SetUniformBytes(sha512Sum(slices.Concat(h[32:], msg)))
	R := new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(r), torsion8)
	k := hram(R.Bytes(), key, msg)
	return key, append(R.Bytes(), new(edwards25519.Scalar).MultiplyAdd(k, a, r).Bytes()...)
}

// mixedOrderSignature signs msg under A' = aB + T (a key with a torsion
// component, which keys.PublicKey refuses, though it is not of small
// order: only rawVerify's comparison with crypto/ed25519 sees it). With
// compensate, R = rB − [t]T for a t ≡ k (mod 8), so [k]A's torsion cancels
// and the signature is valid under the cofactorless rule too; otherwise
// R = rB, valid cofactorless only when 8 divides k.
func mixedOrderSignature(seed, msg []byte, compensate bool) (key, sig []byte) {
	h := sha512Sum(seed)
	a, _ := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	key = new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(a), torsion8).Bytes()
	for nonce := byte(0); ; nonce++ {
		r, _ := new(edwards25519.Scalar).SetUniformBytes(sha512Sum(slices.Concat(h[32:], msg, []byte{nonce})))
		rB := new(edwards25519.Point).ScalarBaseMult(r)
		for t := range 8 {
			if !compensate && t > 0 {
				break
			}
			tT := new(edwards25519.Point).ScalarMult(scalarOf(t), torsion8)
			R := new(edwards25519.Point).Subtract(rB, tT)
			k := hram(R.Bytes(), key, msg)
			if compensate && new(edwards25519.Point).ScalarMult(k, torsion8).Equal(tT) != 1 {
				continue
			}
			s := new(edwards25519.Scalar).MultiplyAdd(k, a, r)
			return key, append(R.Bytes(), s.Bytes()...)
		}
	}
}

func scalarOf(t int) *edwards25519.Scalar {
	var b [32]byte
	b[0] = byte(t)
	s, _ := new(edwards25519.Scalar).SetCanonicalBytes(b[:])
	return s
}

func newExpanded(key []byte) (*voi.ExpandedPublicKey, error) {
	return voi.NewExpandedPublicKey(voi.PublicKey(key))
}

func sha512Sum(b []byte) []byte {
	h := sha512.Sum512(b)
	return h[:]
}

func hram(r, a, msg []byte) *edwards25519.Scalar {
	d := sha512Sum(slices.Concat(r, a, msg))
	k, _ := new(edwards25519.Scalar).SetUniformBytes(d)
	return k
}

// FuzzVerifierMatchesStdlib: whatever the bytes, the kernel's verdict is
// crypto/ed25519's.
func FuzzVerifierMatchesStdlib(f *testing.F) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := []byte("chio.call.v1\x00{}")
	f.Add([]byte(priv.Public().(ed25519.PublicKey)), msg, ed25519.Sign(priv, msg))
	f.Add(make([]byte, 32), msg, make([]byte, 64))
	f.Fuzz(func(t *testing.T, key, msg, sig []byte) {
		if len(key) != ed25519.PublicKeySize {
			return
		}
		if old, now := oldRule(key, msg, sig), newRule(key, msg, sig); old != now {
			t.Fatalf("kernel %v, crypto/ed25519 path %v", now, old)
		}
		if raw, std := rawVerify(key, msg, sig), ed25519.Verify(key, msg, sig); raw != std {
			t.Fatalf("voi %v, crypto/ed25519 %v", raw, std)
		}
	})
}

// TestVerifyKeyCache: a cached key verifies what a fresh one does, and the
// cache stays bounded.
func TestVerifyKeyCache(t *testing.T) {
	c, _ := lru.New[[32]byte, verifyKey](VerifyKeyCacheSize)
	k := &Kernel{verifyKeys: c}
	agent := keys.FromSeed(make([]byte, 32))
	msg := []byte("m")
	sig := agent.SignRaw(msg)
	for range 2 {
		if !k.verifyKeyFor(agent.Public()).verify(msg, sig) {
			t.Fatal("cached key refused a valid signature")
		}
		if k.verifyKeyFor(agent.Public()).verify([]byte("other"), sig) {
			t.Fatal("cached key accepted a signature over another message")
		}
	}
	for i := range VerifyKeyCacheSize + 10 {
		seed := make([]byte, 32)
		seed[0], seed[1] = byte(i), byte(i>>8)
		k.verifyKeyFor(keys.FromSeed(seed).Public())
	}
	if n := k.verifyKeys.Len(); n != VerifyKeyCacheSize {
		t.Fatalf("cache holds %d keys, want %d", n, VerifyKeyCacheSize)
	}
	if (verifyKey{}).verify(msg, sig) || newVerifyKey(keys.PublicKey{}).verify(msg, sig) {
		t.Fatal("the zero key verified a signature")
	}
}
