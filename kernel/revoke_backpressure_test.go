package kernel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// An operator revokes a capability while its agent floods the commit
// queue: the revocation waits out the full queue (back-pressure), it is
// not refused, and the agent's next call is denied.
func TestRevocationWaitsOutAFullCommitQueue(t *testing.T) {
	fs := &fullStore{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: &scriptedTool{},
		Server: "pay", Grants: []string{"echo", "refunds", "asked"},
		WrapStore: func(s kernel.Store) kernel.Store { fs.Store = s; return fs }})
	fs.full.Store(fs.n.Load() + 1) // the revocation's first attempt meets a full queue
	if err := w.Kernel.Revoke(context.Background(), w.Cap.ID); err != nil {
		t.Fatalf("a full queue refused the revocation: %v", err)
	}
	revoked := false
	if err := w.Store.View(func(tx kernel.ReadTx) error {
		var err error
		revoked, err = tx.Revoked(w.Cap.ID)
		return err
	}); err != nil || !revoked {
		t.Fatalf("revoked %v, %v", revoked, err)
	}
}
