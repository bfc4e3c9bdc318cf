package storetest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// A store belongs to the kernel key that created it. Opened under another
// key it is refused (Backend.ErrKeyMismatch), naming both keys: a second
// kernel on it would answer the first one's pending approvals and sign one
// log with two keys. The key that created it opens it again, with its log
// as it was and signed by that key alone.
func testRefusesAnotherKernelKey(t *testing.T, b Backend) {
	s, loc := open(t, b)
	for i := range 3 {
		if _, err := appendOne(s, i); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	other := keys.FromSeed(bytes.Repeat([]byte{8}, 32))
	o, err := b.Open(t, loc, other, nil)
	if err == nil {
		o.Close()
		t.Fatalf("opened a store of kernel key %s under %s", Key().Public(), other.Public())
	}
	if !errors.Is(err, b.ErrKeyMismatch) || !strings.Contains(err.Error(), Key().Public().String()) ||
		!strings.Contains(err.Error(), other.Public().String()) {
		t.Fatalf("another kernel key: %v", err)
	}
	s = reopen(t, b, loc, nil)
	a, err := appendOne(s, 3)
	if err != nil || a.Receipt.Seq != 4 {
		t.Fatalf("the store's own key after the refusal: %v %v", a, err)
	}
	s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(1, 4, func(seq uint64, raw []byte) bool {
			if !bytes.Contains(raw, []byte(Key().Public().String())) {
				t.Errorf("receipt %d is not signed by the store's key", seq)
			}
			return true
		})
	})
}
