package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// Live standing approvals: LiveBatches visits, in id order, exactly the
// batches approval.Batch.Live at the time asked (not revoked, calls left,
// not_after after it), in a View and inside an Update (where this
// transaction's own writes count), and after a reopen. Batches still
// lists every batch ever stored: receipts name them and exports carry
// them.
func testLiveBatches(t *testing.T, b Backend) {
	s, loc := open(t, b)
	const now = 1_900_000_000
	one := int64(1)
	put := func(tx kernel.Tx, id string, notAfter int64, mutate func(*approval.Batch)) error {
		bt := &approval.Batch{Token: &approval.BatchToken{ID: id, Approver: "k", ServerPattern: "*", ToolPattern: "*",
			NotBefore: now - 100, NotAfter: notAfter}, Raw: []byte(`{}`)}
		if mutate != nil {
			mutate(bt)
		}
		return tx.PutBatch(bt)
	}
	update(t, s, func(tx kernel.Tx) error {
		for _, err := range []error{
			put(tx, "ba-live-c", now+60, nil),
			put(tx, "ba-live-a", now+3600, nil),
			put(tx, "ba-future", now+7200, func(bt *approval.Batch) { bt.Token.NotBefore = now + 3600 }),
			put(tx, "ba-ended", now, nil), // not_after is exclusive
			put(tx, "ba-expired", now-3600, nil),
			put(tx, "ba-revoked", now+3600, func(bt *approval.Batch) { bt.Revoked, bt.RevokedAt = true, 1 }),
			put(tx, "ba-used-up", now+3600, func(bt *approval.Batch) { bt.Token.MaxCalls, bt.Usage.Calls = &one, 1 }),
			put(tx, "ba-one-left", now+3600, func(bt *approval.Batch) { bt.Token.MaxCalls = &one }),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	want := []string{"ba-future", "ba-live-a", "ba-live-c", "ba-one-left"}
	all := []string{"ba-ended", "ba-expired", "ba-future", "ba-live-a", "ba-live-c", "ba-one-left", "ba-revoked", "ba-used-up"}
	check := func(s Store, at int64, want, all []string) {
		t.Helper()
		s.View(func(tx kernel.ReadTx) error {
			if got := liveIDs(t, tx, at); !slices.Equal(got, want) {
				t.Errorf("LiveBatches(%d) in a view: %v, want %v", at, got, want)
			}
			if got := pagedIDs(t, tx, ""); !slices.Equal(got, all) {
				t.Errorf("Batches: %v, want every batch %v", got, all)
			}
			// Paging: after an id, and after a string no id equals.
			if got := pagedIDs(t, tx, all[2]); !slices.Equal(got, all[3:]) {
				t.Errorf("Batches after %s: %v, want %v", all[2], got, all[3:])
			}
			if got := pagedIDs(t, tx, all[2]+"0"); !slices.Equal(got, all[3:]) {
				t.Errorf("Batches after %q: %v, want %v", all[2]+"0", got, all[3:])
			}
			return nil
		})
		update(t, s, func(tx kernel.Tx) error {
			if got := liveIDs(t, tx, at); !slices.Equal(got, want) {
				t.Errorf("LiveBatches(%d) in an update: %v, want %v", at, got, want)
			}
			return nil
		})
	}
	check(s, now, want, all)
	check(s, now+60, []string{"ba-future", "ba-live-a", "ba-one-left"}, all)
	check(s, now+7200, nil, all)

	// Using the last call and revoking take a batch out of the live set,
	// for the rest of the same transaction too.
	update(t, s, func(tx kernel.Tx) error {
		last, err := tx.Batch("ba-one-left")
		if err != nil {
			return err
		}
		last.Use(nil)
		if err := tx.PutBatch(last); err != nil {
			return err
		}
		rev, err := tx.Batch("ba-live-c")
		if err != nil {
			return err
		}
		rev.Revoked, rev.RevokedAt = true, 2
		if err := tx.PutBatch(rev); err != nil {
			return err
		}
		if err := put(tx, "ba-new", now+60, nil); err != nil {
			return err
		}
		if got, want := liveIDs(t, tx, now), []string{"ba-future", "ba-live-a", "ba-new"}; !slices.Equal(got, want) {
			return fmt.Errorf("LiveBatches after this transaction's writes: %v, want %v", got, want)
		}
		return nil
	})
	all = append(all, "ba-new")
	slices.Sort(all)
	want = []string{"ba-future", "ba-live-a", "ba-new"}
	check(s, now, want, all)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(reopen(t, b, loc, nil), now, want, all)
}

func liveIDs(t *testing.T, tx kernel.ReadTx, at int64) []string {
	t.Helper()
	var ids []string
	err := tx.LiveBatches(at, func(bt *approval.Batch) bool {
		if !bt.Live(at) {
			t.Errorf("LiveBatches(%d) visited %s, which is not live then", at, bt.Token.ID)
		}
		ids = append(ids, bt.Token.ID)
		return true
	})
	if err != nil {
		t.Error(err)
	}
	return ids
}

// LiveBatchesAfterUpgrade stores batches of every kind, closes the store,
// has strip take it back to the schema before the live-batch index
// existed (with the batches still stored), reopens it and checks that
// LiveBatches finds exactly the live ones: an upgraded store builds the
// index from what it holds.
func LiveBatchesAfterUpgrade(t *testing.T, b Backend, strip func(t *testing.T, loc string)) {
	s, loc := open(t, b)
	const now = 1_900_000_000
	one := int64(1)
	update(t, s, func(tx kernel.Tx) error {
		for i, mutate := range []func(*approval.Batch){
			nil,
			func(bt *approval.Batch) { bt.Token.NotAfter = now - 1 },
			func(bt *approval.Batch) { bt.Revoked = true },
			func(bt *approval.Batch) { bt.Token.MaxCalls, bt.Usage.Calls = &one, 1 },
			func(bt *approval.Batch) { bt.Token.MaxCalls = &one },
		} {
			bt := &approval.Batch{Token: &approval.BatchToken{ID: fmt.Sprintf("ba-%d", i), Approver: "k",
				ServerPattern: "*", ToolPattern: "*", NotAfter: now + 60}, Raw: []byte(`{}`)}
			if mutate != nil {
				mutate(bt)
			}
			if err := tx.PutBatch(bt); err != nil {
				return err
			}
		}
		return nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	strip(t, loc)
	s = reopen(t, b, loc, nil)
	s.View(func(tx kernel.ReadTx) error {
		if got, want := liveIDs(t, tx, now), []string{"ba-0", "ba-4"}; !slices.Equal(got, want) {
			t.Errorf("after the upgrade LiveBatches: %v, want %v", got, want)
		}
		return nil
	})
}

func pagedIDs(t *testing.T, tx kernel.ReadTx, after string) []string {
	t.Helper()
	var ids []string
	if err := tx.Batches(after, func(bt *approval.Batch) bool { ids = append(ids, bt.Token.ID); return true }); err != nil {
		t.Error(err)
	}
	return ids
}
