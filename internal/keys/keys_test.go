package keys

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/edwards25519"
)

// Small-order points of edwards25519 (the eight torsion points' encodings,
// as listed in "Taming the many EdDSAs"), plus the identity.
var smallOrder = []string{
	"0100000000000000000000000000000000000000000000000000000000000000", // identity
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // order 2
	"0000000000000000000000000000000000000000000000000000000000000000", // order 4
	"0000000000000000000000000000000000000000000000000000000000000080", // order 4
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05", // order 8
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a", // order 8
}

func TestRejectsSmallOrderKeys(t *testing.T) {
	for _, h := range smallOrder {
		_, err := ParsePublicKey(Prefix + h)
		if err == nil {
			t.Errorf("%s accepted", h)
		}
	}
	// The identity specifically must be called weak.
	if _, err := ParsePublicKey(Prefix + smallOrder[0]); !errors.Is(err, ErrWeakKey) {
		t.Fatalf("identity: %v", err)
	}
}

func TestRejectsNonCanonicalEncoding(t *testing.T) {
	// y = p (2^255-19) encodes y = 0 non-canonically; y = p+1 encodes y = 1.
	nonCanon := "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"
	_, err := ParsePublicKey(Prefix + nonCanon)
	if !errors.Is(err, ErrNonCanonical) && !errors.Is(err, ErrWeakKey) && !errors.Is(err, ErrMalformedKey) {
		t.Fatalf("non-canonical accepted: %v", err)
	}
	if err == nil {
		t.Fatal("accepted")
	}
}

func TestParseFormat(t *testing.T) {
	k, err := Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := k.Public().String()
	p, err := ParsePublicKey(s)
	if err != nil || !p.Equal(k.Public()) {
		t.Fatalf("round trip: %v", err)
	}
	bad := []string{
		"", "ed25519:", s[:len(s)-2], s + "00", strings.ToUpper(s),
		"ed448:" + s[len(Prefix):], "ed25519:" + strings.Repeat("zz", 32),
	}
	for _, b := range bad {
		if _, err := ParsePublicKey(b); err == nil {
			t.Errorf("accepted %q", b)
		}
	}
	var zero PublicKey
	if zero.Equal(zero) || !zero.IsZero() {
		t.Fatal("zero key must not equal anything")
	}
}

func TestPKCS8FileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.pem")
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	k := FromSeed(seed) // RFC 8032 test 1
	if got := k.Public().String(); got != Prefix+"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" {
		t.Fatalf("RFC 8032 public key: %s", got)
	}
	if err := WritePrivateKey(path, k); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if err := WritePrivateKey(path, k); err == nil {
		t.Fatal("overwrote an existing key file")
	}
	back, err := LoadPrivateKey(path)
	if err != nil || !back.Public().Equal(k.Public()) {
		t.Fatalf("load: %v", err)
	}
	pemBytes, _ := os.ReadFile(path)
	if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Fatalf("not PKCS#8 PEM: %s", pemBytes)
	}
	if strings.Contains(k.String(), hex.EncodeToString(seed)) {
		t.Fatal("String leaks the seed")
	}
	if _, err := ParsePKCS8PEM([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")); !errors.Is(err, ErrBadPrivateKey) {
		t.Fatalf("garbage PEM: %v", err)
	}
}

func FuzzParsePublicKey(f *testing.F) {
	f.Add(Prefix + smallOrder[0])
	f.Add(Prefix + "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePublicKey(s)
		if err != nil {
			return
		}
		if k.String() != s {
			t.Fatalf("accepted %q but formats as %q", s, k.String())
		}
	})
}

// A key with a torsion component, A+T (T of small order), is not the
// public half of any key Ed25519 generates (those are multiples of the
// base point), yet whoever holds A's private scalar signs under it too:
// crypto/ed25519's cofactorless check accepts [S]B = R + [k](A+T) whenever
// [k]T is the identity (every other nonce for T of order 2). Accepted, one
// private key would pass as two distinct keys (two approvers of one
// quorum, or an agent's key beside its own approver's). It must be refused
// wherever a key is parsed, as small-order keys are.
func TestRejectsKeysWithATorsionComponent(t *testing.T) {
	seed, _ := hex.DecodeString("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
	a, err := new(edwards25519.Point).SetBytes(FromSeed(seed).Public().Ed25519())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range smallOrder[1:] {
		raw, _ := hex.DecodeString(h)
		tp, err := new(edwards25519.Point).SetBytes(raw)
		if err != nil {
			t.Fatal(err)
		}
		twin := hex.EncodeToString(new(edwards25519.Point).Add(a, tp).Bytes())
		if _, err := ParsePublicKey(Prefix + twin); !errors.Is(err, ErrWeakKey) {
			t.Errorf("A + (point %s) = %s: %v, want ErrWeakKey", h[:8], twin, err)
		}
	}
	// The key itself stays acceptable.
	if _, err := ParsePublicKey(FromSeed(seed).Public().String()); err != nil {
		t.Fatal(err)
	}
}
