package kernel

import (
	"crypto/ed25519"

	"github.com/chiokernel/chio/internal/keys"
)

// ed25519Verify is the one raw signature check in this package; keys.PublicKey
// has already refused weak keys.
func ed25519Verify(k keys.PublicKey, msg, sig []byte) bool {
	return !k.IsZero() && len(sig) == ed25519.SignatureSize && ed25519.Verify(k.Ed25519(), msg, sig)
}
