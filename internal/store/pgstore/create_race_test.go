package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

var errExists = errors.New("exists")

// createRace runs create on replica a up to its read ("absent"), then, on
// replica b, create and change to completion, and then lets a's commit go
// on. A row a read as absent must be inserted, never upserted: a's commit
// then meets b's row on the key, runs again, and its function finds the
// row (errExists), so b's acknowledged change is kept.
func createRace(t *testing.T, create func(tx kernel.Tx, afterRead func()) error, change func(kernel.Tx) error) (errA error, b *pgstore.Store) {
	t.Helper()
	dsn := pgtest.Database(t)
	a := openPG(t, dsn)
	b = openPG(t, dsn)
	read, release := make(chan struct{}), make(chan struct{})
	doneA := make(chan error, 1)
	go func() {
		first := true
		doneA <- a.Update(context.Background(), func(tx kernel.Tx) error {
			return create(tx, func() {
				if first { // a run again finds the row; only the first waits
					first = false
					close(read)
					<-release
				}
			})
		})
	}()
	<-read
	if err := b.Update(context.Background(), func(tx kernel.Tx) error { return create(tx, func() {}) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Update(context.Background(), change); err != nil {
		t.Fatal(err)
	}
	close(release)
	return <-doneA, b
}

// Two replicas creating one standing approval at once: the later creation
// used to be upserted over the earlier one (ON CONFLICT DO UPDATE) although
// its function had read the batch as absent, silently undoing a revocation
// and a used slot committed in between.
func TestConcurrentBatchCreationKeepsTheOthersRevocationAndSlots(t *testing.T) {
	max := int64(1)
	create := func(tx kernel.Tx, afterRead func()) error {
		switch _, err := tx.Batch("ba-same"); {
		case err == nil:
			return errExists
		case !errors.Is(err, kernel.ErrNotFound):
			return err
		}
		afterRead()
		return tx.PutBatch(&approval.Batch{Token: &approval.BatchToken{ID: "ba-same", Approver: "k", ServerPattern: "*",
			ToolPattern: "*", MaxCalls: &max, NotAfter: 1 << 40}, Raw: []byte(`{}`), CreatedAt: 1})
	}
	errA, b := createRace(t, create, func(tx kernel.Tx) error {
		bt, err := tx.Batch("ba-same")
		if err != nil {
			return err
		}
		bt.Use(nil)
		bt.Revoked, bt.RevokedAt = true, 5
		return tx.PutBatch(bt)
	})
	var got *approval.Batch
	b.View(func(tx kernel.ReadTx) error { got, _ = tx.Batch("ba-same"); return nil })
	if !errors.Is(errA, errExists) || got == nil || !got.Revoked || got.Usage.Calls != 1 {
		var calls int64 = -1
		if got != nil {
			calls = got.Usage.Calls
		}
		t.Fatalf("A's creation (read absent): %v; stored batch revoked=%v calls=%d; "+
			"want A refused (exists) and the revocation and used slot kept", errA, got != nil && got.Revoked, calls)
	}
}

// The same rule for approval requests: one created on a replica that read
// it as absent never overwrites the other replica's resolution.
func TestConcurrentApprovalCreationKeepsTheOthersResolution(t *testing.T) {
	create := func(tx kernel.Tx, afterRead func()) error {
		switch _, err := tx.Approval("ar-same"); {
		case err == nil:
			return errExists
		case !errors.Is(err, kernel.ErrNotFound):
			return err
		}
		afterRead()
		return tx.PutApproval(&approval.Request{ApprovalID: "ar-same", RequestID: "req-same", Status: approval.StatusPending,
			ExpiresAt: 1 << 40})
	}
	errA, b := createRace(t, create, func(tx kernel.Tx) error {
		r, err := tx.Approval("ar-same")
		if err != nil {
			return err
		}
		r.Status = approval.StatusDenied
		return tx.PutApproval(r)
	})
	var got *approval.Request
	b.View(func(tx kernel.ReadTx) error { got, _ = tx.Approval("ar-same"); return nil })
	if !errors.Is(errA, errExists) || got == nil || got.Status != approval.StatusDenied {
		t.Fatalf("A's creation (read absent): %v; stored request %+v; want A refused (exists) and the denial kept", errA, got)
	}
}
