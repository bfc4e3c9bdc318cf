package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// Records: calls, approvals, tokens, counters, batches, revocations.

// A call record round-trips; the dispatching index holds exactly the calls
// whose status is dispatching, and a call leaves it when it settles.
func testCallsAndDispatching(t *testing.T, b Backend) {
	s, _ := open(t, b)
	put := func(id, status string) {
		update(t, s, func(tx kernel.Tx) error {
			return tx.PutCall(&kernel.CallRecord{RequestID: id, Status: status, Subject: "ed25519:aa",
				Arguments: []byte(`{"x":1}`), DecisionReceiptID: "rc-" + id})
		})
	}
	for i := 0; i < 20; i++ {
		status := kernel.StatusAllowed
		if i%4 == 0 {
			status = kernel.StatusDispatching
		}
		put(fmt.Sprintf("call-%02d", i), status)
	}
	dispatching := func() []string {
		var ids []string
		err := s.View(func(tx kernel.ReadTx) error {
			return tx.Dispatching(func(c *kernel.CallRecord) bool { ids = append(ids, c.RequestID); return true })
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	if got := dispatching(); !slices.Equal(got, []string{"call-00", "call-04", "call-08", "call-12", "call-16"}) {
		t.Fatalf("dispatching %v", got)
	}
	put("call-04", kernel.StatusAllowed) // settled
	put("call-05", kernel.StatusDispatching)
	if got := dispatching(); !slices.Equal(got, []string{"call-00", "call-05", "call-08", "call-12", "call-16"}) {
		t.Fatalf("dispatching after settle %v", got)
	}
	s.View(func(tx kernel.ReadTx) error {
		c, err := tx.Call("call-07")
		if err != nil || c.Subject != "ed25519:aa" || string(c.Arguments) != `{"x":1}` || c.DecisionReceiptID != "rc-call-07" {
			t.Errorf("call round trip: %+v %v", c, err)
		}
		if _, err := tx.Call("nope"); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("missing call: %v", err)
		}
		if _, err := tx.Call("bad\x00id"); !errors.Is(err, kernel.ErrNotFound) {
			t.Errorf("impossible id: %v", err)
		}
		return nil
	})
	// A write inside Update is read back by the same function.
	update(t, s, func(tx kernel.Tx) error {
		if err := tx.PutCall(&kernel.CallRecord{RequestID: "rw", Status: kernel.StatusDenied}); err != nil {
			return err
		}
		c, err := tx.Call("rw")
		if err != nil || c.Status != kernel.StatusDenied {
			return fmt.Errorf("read your write: %+v %v", c, err)
		}
		return nil
	})
}

// Of many concurrent functions that each create the same request id only
// if it does not exist yet (the kernel's "never overwrite a decision"),
// exactly one commits.
func testFreshRecordOnce(t *testing.T, b Backend) {
	s, loc := open(t, b)
	stores := []Store{s}
	if b.Replicas {
		stores = append(stores, replicas(t, b, loc, 2)...)
	}
	errUsed := errors.New("request id used")
	var ok, used atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := stores[i%len(stores)].Update(context.Background(), func(tx kernel.Tx) error {
				if _, err := tx.Call("same"); err == nil {
					return errUsed
				} else if !errors.Is(err, kernel.ErrNotFound) {
					return err
				}
				return tx.PutCall(&kernel.CallRecord{RequestID: "same", Status: kernel.StatusAllowed, Reason: fmt.Sprint(i)})
			})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, errUsed):
				used.Add(1)
			default:
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != 1 || used.Load() != 59 {
		t.Fatalf("%d created, %d refused; want 1 and 59", ok.Load(), used.Load())
	}
}

// Pending requests are visited oldest first (approval ids are UUIDv7) and
// leave the pending set when they resolve.
func testApprovalsPendingOrder(t *testing.T, b Backend) {
	s, _ := open(t, b)
	var ids []string
	for i := 0; i < 30; i++ {
		id := approval.NewRequestID()
		ids = append(ids, id)
		time.Sleep(time.Millisecond) // distinct UUIDv7 milliseconds
	}
	// Written in scrambled order, in two commits.
	scrambled := append([]string(nil), ids...)
	slices.Reverse(scrambled)
	for _, half := range [][]string{scrambled[:15], scrambled[15:]} {
		update(t, s, func(tx kernel.Tx) error {
			for _, id := range half {
				r := &approval.Request{ApprovalID: id, Status: approval.StatusPending, ExpiresAt: 100, Votes: []approval.Vote{}}
				if err := tx.PutApproval(r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	pending := func() []string {
		var out []string
		s.View(func(tx kernel.ReadTx) error {
			return tx.PendingApprovals(func(r *approval.Request) bool { out = append(out, r.ApprovalID); return true })
		})
		return out
	}
	if got := pending(); !slices.Equal(got, ids) {
		t.Fatalf("pending order:\n got %v\nwant %v", got, ids)
	}
	update(t, s, func(tx kernel.Tx) error {
		r, err := tx.Approval(ids[3])
		if err != nil {
			return err
		}
		r.Status = approval.StatusApproved
		r.Resolution = &approval.Resolution{Outcome: approval.StatusApproved}
		return tx.PutApproval(r)
	})
	want := slices.Delete(slices.Clone(ids), 3, 4)
	if got := pending(); !slices.Equal(got, want) {
		t.Fatalf("pending after resolve: %v", got)
	}
	// Stopping early stops; the resolved request is still readable.
	n := 0
	s.View(func(tx kernel.ReadTx) error {
		tx.PendingApprovals(func(*approval.Request) bool { n++; return n < 4 })
		r, err := tx.Approval(ids[3])
		if err != nil || r.Status != approval.StatusApproved || r.Resolution == nil {
			t.Errorf("resolved request: %+v %v", r, err)
		}
		return nil
	})
	if n != 4 {
		t.Fatalf("early stop visited %d", n)
	}
	// Inside Update, a request written by the same function is pending.
	update(t, s, func(tx kernel.Tx) error {
		extra := approval.NewRequestID()
		if err := tx.PutApproval(&approval.Request{ApprovalID: extra, Status: approval.StatusPending}); err != nil {
			return err
		}
		found := false
		err := tx.PendingApprovals(func(r *approval.Request) bool { found = found || r.ApprovalID == extra; return true })
		if err == nil && !found {
			err = errors.New("own pending request not visited")
		}
		return err
	})
}

// Of 100 concurrent presentations of one token (in separate commits, and on
// every replica when the backend has them), exactly one consumes it; the
// others get approval.ErrReplay. Two consumptions in one function: the
// second is a replay.
func testConsumeExactlyOnce(t *testing.T, b Backend) {
	s, loc := open(t, b)
	stores := []Store{s}
	if b.Replicas {
		stores = append(stores, replicas(t, b, loc, 2)...)
	}
	for round := 0; round < 3; round++ {
		token := fmt.Sprintf("at-round-%d", round)
		var ok, replay atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				err := stores[i%len(stores)].Update(context.Background(), func(tx kernel.Tx) error {
					if err := tx.Consume(token, "ar-x"); err != nil {
						return err
					}
					return tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("vote-%d-%d", round, i), Status: kernel.StatusAllowed})
				})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, approval.ErrReplay):
					replay.Add(1)
				default:
					t.Error(err)
				}
			}(i)
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || replay.Load() != 99 {
			t.Fatalf("round %d: %d consumed, %d replays; want 1 and 99", round, ok.Load(), replay.Load())
		}
		// Only the winner's other writes exist.
		calls := 0
		s.View(func(tx kernel.ReadTx) error {
			for i := 0; i < 100; i++ {
				if _, err := tx.Call(fmt.Sprintf("vote-%d-%d", round, i)); err == nil {
					calls++
				}
			}
			if used, err := tx.Consumed(token); err != nil || !used {
				t.Errorf("token not durably consumed: %v", err)
			}
			return nil
		})
		if calls != 1 {
			t.Fatalf("round %d: %d losers' writes committed", round, calls-1)
		}
	}
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		if err := tx.Consume("at-twice", "ar-y"); err != nil {
			return err
		}
		return tx.Consume("at-twice", "ar-y")
	})
	if !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("second consume in one function: %v", err)
	}
	s.View(func(tx kernel.ReadTx) error {
		if used, _ := tx.Consumed("at-twice"); used {
			t.Error("a failed function's consumption was kept")
		}
		return nil
	})
}

// Read-modify-write of a counter from many concurrent commits loses no
// increment.
func testCountersNoLostUpdate(t *testing.T, b Backend) {
	s, loc := open(t, b)
	stores := []Store{s}
	if b.Replicas {
		stores = append(stores, replicas(t, b, loc, 2)...)
	}
	const n = 150
	key := "firstn\x00grant\x00ed25519:aa" // the kernel's keys hold NUL bytes
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := stores[i%len(stores)].Update(context.Background(), func(tx kernel.Tx) error {
				v, err := tx.Counter(key)
				if err != nil {
					return err
				}
				return tx.SetCounter(key, v+1)
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	s.View(func(tx kernel.ReadTx) error {
		if v, err := tx.Counter(key); err != nil || v != n {
			t.Errorf("counter %d (%v), want %d", v, err, n)
		}
		if v, err := tx.Counter("never set"); err != nil || v != 0 {
			t.Errorf("unset counter %d %v", v, err)
		}
		return nil
	})
}

// Standing approvals: concurrent calls claiming slots through LiveBatches
// (as the kernel does) never take more than max_calls.
func testBatchesNoLostUpdate(t *testing.T, b Backend) {
	s, loc := open(t, b)
	stores := []Store{s}
	if b.Replicas {
		stores = append(stores, replicas(t, b, loc, 2)...)
	}
	limit := int64(40)
	update(t, s, func(tx kernel.Tx) error {
		for i, max := range []*int64{&limit, nil} {
			err := tx.PutBatch(&approval.Batch{Token: &approval.BatchToken{ID: fmt.Sprintf("ba-%d", i), Approver: "k",
				ServerPattern: "*", ToolPattern: "*", MaxCalls: max, NotAfter: 1 << 40}, Raw: []byte(`{}`)})
			if err != nil {
				return err
			}
		}
		return nil
	})
	errNone := errors.New("no batch covers the call")
	var ok, none atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := stores[i%len(stores)].Update(context.Background(), func(tx kernel.Tx) error {
				var used *approval.Batch
				err := tx.LiveBatches(1, func(bt *approval.Batch) bool {
					if bt.Token.ID == "ba-0" && bt.Covers("", "s", "t", nil, 1) {
						used = bt
						return false
					}
					return true
				})
				if err != nil {
					return err
				}
				if used == nil {
					return errNone
				}
				used.Use(nil)
				return tx.PutBatch(used)
			})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, errNone):
				none.Add(1)
			default:
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if ok.Load() != limit || none.Load() != 100-limit {
		t.Fatalf("%d calls claimed a slot of %d, %d refused", ok.Load(), limit, none.Load())
	}
	s.View(func(tx kernel.ReadTx) error {
		bt, err := tx.Batch("ba-0")
		if err != nil || bt.Usage.Calls != limit {
			t.Errorf("usage %+v %v", bt, err)
		}
		var ids []string
		tx.Batches("", func(bt *approval.Batch) bool { ids = append(ids, bt.Token.ID); return true })
		if !slices.Equal(ids, []string{"ba-0", "ba-1"}) {
			t.Errorf("batches %v", ids)
		}
		return nil
	})
}

// The first revocation time wins; unknown capabilities are not revoked.
func testRevocations(t *testing.T, b Backend) {
	s, _ := open(t, b)
	update(t, s, func(tx kernel.Tx) error { return tx.Revoke("cap-a", 100) })
	update(t, s, func(tx kernel.Tx) error {
		if ok, err := tx.Revoked("cap-a"); err != nil || !ok {
			return fmt.Errorf("revoked inside update: %v %v", ok, err)
		}
		return tx.Revoke("cap-a", 200)
	})
	s.View(func(tx kernel.ReadTx) error {
		for id, want := range map[string]bool{"cap-a": true, "cap-b": false, "": false} {
			if got, err := tx.Revoked(id); err != nil || got != want {
				t.Errorf("Revoked(%q) = %v %v", id, got, err)
			}
		}
		return nil
	})
}

// replicas opens n more handles on loc (other replicas of one
// database).
func replicas(t testing.TB, b Backend, loc string, n int) []Store {
	t.Helper()
	out := make([]Store, n)
	for i := range out {
		out[i] = reopen(t, b, loc, nil)
	}
	return out
}
