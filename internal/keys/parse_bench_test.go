package keys

import (
	"bytes"
	"testing"
)

// BenchmarkParsePublicKey: what parsing a key costs (the checks a key
// meets: length, encoding, small order, torsion component).
func BenchmarkParsePublicKey(b *testing.B) {
	s := FromSeed(bytes.Repeat([]byte{7}, 32)).Public().String()
	for b.Loop() {
		if _, err := ParsePublicKey(s); err != nil {
			b.Fatal(err)
		}
	}
}
