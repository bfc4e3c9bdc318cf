package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// Revoking an id no capability can have (a capability id is 1..128 of
// [A-Za-z0-9._:-]) is a bad request on either store, and records nothing.
// bbolt used to answer "revoked" for any id (a NUL, invalid UTF-8, a
// space), while PostgreSQL, whose text cannot hold a NUL or invalid
// UTF-8, failed the commit with an unclassified error (HTTP 500).
func TestParityRevokeOfAnImpossibleCapabilityID(t *testing.T) {
	for _, sd := range paritySides(t) {
		for _, id := range []string{"cap-\x00x", "cap-\xffx", "cap-é", "cap x", "cap/x", ".", ".."} {
			if err := sd.k.Revoke(context.Background(), id); !errors.Is(err, kernel.ErrBadCall) {
				t.Errorf("%s: Revoke(%q) = %v, want ErrBadCall", sd.name, id, err)
			}
			err := sd.store.View(func(tx kernel.ReadTx) error {
				if revoked, err := tx.Revoked(id); err != nil || revoked {
					t.Errorf("%s: %q recorded as revoked (%v)", sd.name, id, err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// A well-formed id is still revoked.
		if err := sd.k.Revoke(context.Background(), "cap-A.b_c:d-9"); err != nil {
			t.Errorf("%s: a well-formed id: %v", sd.name, err)
		}
	}
}
