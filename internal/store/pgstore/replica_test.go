package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/kernel"
)

func parkDue(t *testing.T, s *pgstore.Store, n int, expires int64) []string {
	t.Helper()
	var ids []string
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		for i := 0; i < n; i++ {
			id := approval.NewRequestID()
			ids = append(ids, id)
			if err := tx.PutApproval(&approval.Request{ApprovalID: id, Status: approval.StatusPending, ExpiresAt: expires}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// Replicas sweeping at once claim each due deadline exactly once; requests
// not yet due, or no longer pending, are never claimed; a claim of a
// replica that is gone is free at once, and any write releases a claim.
func TestClaimDeadlines(t *testing.T) {
	dsn := pgtest.Database(t)
	stores := []*pgstore.Store{openPG(t, dsn), openPG(t, dsn), openPG(t, dsn)}
	now := time.Now()
	due := parkDue(t, stores[0], 50, now.Unix()-1)
	later := parkDue(t, stores[0], 5, now.Unix()+3600)
	var mu sync.Mutex
	var claimed []string
	var wg sync.WaitGroup
	for round := 0; round < 4; round++ {
		for _, s := range stores {
			wg.Add(1)
			go func(s *pgstore.Store) {
				defer wg.Done()
				ids, err := s.ClaimDeadlines(context.Background(), now, "", 20)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				claimed = append(claimed, ids...)
				mu.Unlock()
			}(s)
		}
	}
	wg.Wait()
	slices.Sort(claimed)
	if !slices.Equal(claimed, due) {
		t.Fatalf("claimed %d (%d distinct) of %d due; want each exactly once, whoever sweeps", len(claimed), len(slices.Compact(slices.Clone(claimed))), len(due))
	}
	if ids, _ := stores[1].ClaimDeadlines(context.Background(), now, later[0], 1); len(ids) != 0 {
		t.Fatalf("a deadline not yet due was claimed: %v", ids)
	}
	// The claimant itself may claim again (it retries after a failure).
	if ids, _ := stores[0].ClaimDeadlines(context.Background(), now, claimed[0], 1); len(ids) > 1 {
		t.Fatalf("%v", ids)
	}
	// A write releases the claim; a resolved request is never claimed.
	// Which replica won which deadline above is the scheduler's choice
	// (replica 1 may have won none), so replica 1 claims one more now.
	extra := parkDue(t, stores[0], 1, now.Unix()-1)
	if ids, err := stores[1].ClaimDeadlines(context.Background(), now, "", 20); err != nil || !slices.Equal(ids, extra) {
		t.Fatalf("replica 1 claimed %v (%v), want only the new deadline %v", ids, err, extra)
	}
	mine := extra[0]
	if ids, _ := stores[1].ClaimDeadlines(context.Background(), now, mine, 1); len(ids) != 1 {
		t.Fatalf("replica 1 may not claim again the deadline it holds: %v", ids)
	}
	if ids, _ := stores[2].ClaimDeadlines(context.Background(), now, mine, 1); len(ids) != 0 {
		t.Fatalf("a live replica's claim was taken")
	}
	stores[1].Close() // gone: its claims are free at once
	if ids, _ := stores[2].ClaimDeadlines(context.Background(), now, mine, 1); len(ids) != 1 {
		t.Fatalf("a gone replica's claim was not freed")
	}
	err := stores[0].Update(context.Background(), func(tx kernel.Tx) error {
		r, err := tx.Approval(mine)
		if err != nil {
			return err
		}
		r.Status = approval.StatusExpired
		return tx.PutApproval(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := stores[0].ClaimDeadlines(context.Background(), now, mine, 1); len(ids) != 0 {
		t.Fatalf("a resolved request was claimed")
	}
}

// Calls dispatching under a live replica are never taken over; those of a
// replica that closed (or whose heartbeat stopped for the lease) are,
// exactly once, and the new owner is the claimant.
func TestClaimOrphans(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b, c := openPG(t, dsn), openPG(t, dsn), openPG(t, dsn)
	// A replica judges nobody gone for its first lease (outage.go): wait
	// it out, so that what is measured below is the claim itself.
	time.Sleep(openLease + 100*time.Millisecond)
	err := a.Update(context.Background(), func(tx kernel.Tx) error {
		for i := 0; i < 30; i++ {
			if err := tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("fl-%d", i), Status: kernel.StatusDispatching}); err != nil {
				return err
			}
		}
		return tx.PutCall(&kernel.CallRecord{RequestID: "done", Status: kernel.StatusAllowed})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.ClaimOrphans(context.Background(), 100); err != nil || len(got) != 0 {
		t.Fatalf("took %d calls of a live replica (%v)", len(got), err)
	}
	if got, _ := a.ClaimOrphans(context.Background(), 100); len(got) != 0 {
		t.Fatalf("a replica took its own live calls")
	}
	a.Close()
	var mu sync.Mutex
	taken := map[string]int{}
	var wg sync.WaitGroup
	for _, s := range []*pgstore.Store{b, c, b, c} {
		wg.Add(1)
		go func(s *pgstore.Store) {
			defer wg.Done()
			got, err := s.ClaimOrphans(context.Background(), 10)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, r := range got {
				taken[r.RequestID]++
			}
			mu.Unlock()
		}(s)
	}
	wg.Wait()
	for len(taken) < 30 {
		got, _ := b.ClaimOrphans(context.Background(), 10)
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			taken[r.RequestID]++
		}
	}
	if len(taken) != 30 {
		t.Fatalf("took over %d of 30 calls", len(taken))
	}
	for id, n := range taken {
		if n != 1 {
			t.Fatalf("%s taken over %d times", id, n)
		}
	}
	// Taken over means owned: the new owner is alive, nobody takes them again.
	if got, _ := c.ClaimOrphans(context.Background(), 100); len(got) != 0 {
		t.Fatalf("calls of a live new owner taken again: %d", len(got))
	}
}

// max_calls_per_minute counts every replica's calls, per key, over the
// minute before now.
func TestHitRateIsShared(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	now := time.Unix(1_800_000_000, 0)
	for i := 1; i <= 6; i++ {
		s := a
		if i%2 == 0 {
			s = b
		}
		n, err := s.HitRate("g\x00agent", now.Add(time.Duration(i)*time.Second))
		if err != nil || n != i {
			t.Fatalf("hit %d: %d %v", i, n, err)
		}
	}
	if n, _ := a.HitRate("other", now); n != 1 {
		t.Fatalf("another key counted %d", n)
	}
	// A minute later the first hits have left the window.
	if n, _ := b.HitRate("g\x00agent", now.Add(63*time.Second)); n != 4 {
		t.Fatalf("sliding window: %d, want 4 (the hits at 4, 5 and 6 s, and this one)", n)
	}
}
