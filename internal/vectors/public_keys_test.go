package vectors

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"filippo.io/edwards25519"

	"github.com/chiokernel/chio/internal/keys"
)

// --- public keys: which the SDKs must accept and which refuse ---

// Verdicts of keys.ParsePublicKey, shared with the SDKs' tests: a key is
// accepted ("ok") or refused for one of the reasons below.
const (
	keyOK           = "ok"
	keyMalformed    = "malformed"     // not "ed25519:" + 64 lowercase hex, or no curve point
	keyNonCanonical = "non_canonical" // a curve point, but not its canonical encoding
	keySmallOrder   = "small_order"   // a point of small order (the identity, for one)
	keyTorsion      = "torsion"       // A+T, T of small order: a torsion component
)

type publicKeyVector struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
	Verdict   string `json:"verdict"`
}

// verdict is keys.ParsePublicKey's word on s.
func verdict(s string) string {
	_, err := keys.ParsePublicKey(s)
	switch {
	case err == nil:
		return keyOK
	case errors.Is(err, keys.ErrTorsionKey):
		return keyTorsion
	case errors.Is(err, keys.ErrWeakKey):
		return keySmallOrder
	case errors.Is(err, keys.ErrNonCanonical):
		return keyNonCanonical
	case errors.Is(err, keys.ErrMalformedKey):
		return keyMalformed
	}
	panic(fmt.Sprintf("%s: unexpected error %v", s, err))
}

// The eight points of small order (encodings with x ≥ 0 where x ≠ 0).
var smallOrderPoints = []struct{ name, hex string }{
	{"identity", "0100000000000000000000000000000000000000000000000000000000000000"},
	{"order 2", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"},
	{"order 4", "0000000000000000000000000000000000000000000000000000000000000000"},
	{"order 4 (-x)", "0000000000000000000000000000000000000000000000000000000000000080"},
	{"order 8", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"},
	{"order 8 (-x)", "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"},
	{"order 8 (-y)", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"},
	{"order 8 (-y, -x)", "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"},
}

func TestPublicKeys(t *testing.T) {
	out := struct {
		header
		Cases []publicKeyVector `json:"cases"`
	}{header: header{"Public keys in text form and keys.ParsePublicKey's verdict on each: ok, or refused as " +
		"malformed (not ed25519:<64 lowercase hex>, or no curve point), non_canonical, small_order, or torsion " +
		"(A+T with T of small order and A a real key: not in the prime-order subgroup, [l]A is not the identity). " +
		"Every SDK must accept exactly the ok keys, wherever it takes a public key."}}
	add := func(name, s, want string) {
		got := verdict(s)
		if want != "" && got != want {
			t.Errorf("%s (%s): keys.ParsePublicKey says %s, want %s", name, s, got, want)
		}
		out.Cases = append(out.Cases, publicKeyVector{name, s, got})
	}
	point := func(h string) *edwards25519.Point {
		raw, _ := hex.DecodeString(h)
		p, err := new(edwards25519.Point).SetBytes(raw)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		return p
	}

	// Real keys, multiples of the base point B.
	for _, k := range testKeys {
		add(k.name+" key", key(t, k.name).Public().String(), keyOK)
	}
	add("RFC 8032 test 1", keys.Prefix+"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", keyOK)
	add("RFC 8032 test 2", keys.Prefix+"3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", keyOK)
	add("base point B", keys.Prefix+hex.EncodeToString(edwards25519.NewGeneratorPoint().Bytes()), keyOK)
	add("-B", keys.Prefix+hex.EncodeToString(new(edwards25519.Point).Negate(edwards25519.NewGeneratorPoint()).Bytes()), keyOK)

	// The small-order points, and x = 0 with the sign bit set.
	for _, p := range smallOrderPoints {
		add(p.name, keys.Prefix+p.hex, keySmallOrder)
	}
	add("identity, sign bit set", keys.Prefix+"01"+strings.Repeat("00", 30)+"80", keyNonCanonical)
	add("order 2, sign bit set", keys.Prefix+"ec"+strings.Repeat("ff", 31), keyNonCanonical)

	// A real key plus each small-order point but the identity: one private
	// key would sign for both.
	for _, k := range testKeys {
		a := point(key(t, k.name).Public().String()[len(keys.Prefix):])
		for _, p := range smallOrderPoints[1:] {
			twin := new(edwards25519.Point).Add(a, point(p.hex))
			add(k.name+" key + "+p.name, keys.Prefix+hex.EncodeToString(twin.Bytes()), keyTorsion)
		}
	}
	add("B + order 2", keys.Prefix+hex.EncodeToString(new(edwards25519.Point).Add(edwards25519.NewGeneratorPoint(),
		point(smallOrderPoints[1].hex)).Bytes()), keyTorsion)

	// y ≥ p: the 19 encodings of y = p … p+18, with either sign bit. Those
	// that name a curve point are non-canonical, the rest no point at all.
	for i := 0; i < 19; i++ {
		for _, sign := range []byte{0, 0x80} {
			b := make([]byte, 32)
			for j := range b {
				b[j] = 0xff
			}
			b[0], b[31] = 0xed+byte(i), 0x7f|sign
			add(fmt.Sprintf("y = p+%d, sign %d", i, sign>>7), keys.Prefix+hex.EncodeToString(b), "")
		}
	}

	// Arbitrary encodings (SHA-256 of a counter): about half name no point;
	// of those that do, most have a torsion component (7 in 8).
	for i := 0; i < 32; i++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("chio public key vector %d", i)))
		add(fmt.Sprintf("arbitrary %d", i), keys.Prefix+hex.EncodeToString(sum[:]), "")
	}

	// Not the text form at all.
	agent := key(t, "agent").Public().String()
	add("uppercase hex", keys.Prefix+strings.ToUpper(agent[len(keys.Prefix):]), keyMalformed)
	add("31 bytes", agent[:len(agent)-2], keyMalformed)
	add("33 bytes", agent+"00", keyMalformed)
	add("no prefix", agent[len(keys.Prefix):], keyMalformed)
	add("ed448 prefix", "ed448:"+agent[len(keys.Prefix):], keyMalformed)

	check(t, "public_keys.json", out)
}
