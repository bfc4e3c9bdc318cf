package receipt

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

func BenchmarkSignReceipt(b *testing.B) {
	k := keys.FromSeed(make([]byte, 32))
	for i := 0; i < b.N; i++ {
		r := &Receipt{ID: "rc-01234567-89ab-cdef-0123-456789abcdef", Seq: uint64(i), RequestID: "req-1", Subject: "ed25519:" + strings.Repeat("a", 64),
			ToolServer: "demo", ToolName: "echo", Action: "invoke", ParameterHash: strings.Repeat("a", 64), Timestamp: 1,
			Decision: Decision{Verdict: Allow}, PolicyHash: strings.Repeat("b", 64), Metadata: map[string]any{"a": "b"}}
		if _, err := Sign(k, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEd25519Only(b *testing.B) {
	k := keys.FromSeed(make([]byte, 32))
	msg := []byte(strings.Repeat("x", 400))
	for i := 0; i < b.N; i++ {
		k.SignRaw(msg)
	}
}
