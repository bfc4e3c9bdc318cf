package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

// Group commit: what a caller of Update may rely on.

func newReceipt(i int) *receipt.Receipt {
	return &receipt.Receipt{ID: fmt.Sprintf("rc-%d", i), Timestamp: int64(i), RequestID: fmt.Sprintf("req-%d", i),
		Decision: receipt.Decision{Verdict: receipt.Allow}}
}

func appendOne(s Store, i int) (*kernel.Appended, error) {
	var a *kernel.Appended
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		a = tx.AppendReceipt(newReceipt(i))
		return tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("req-%d", i), Status: kernel.StatusAllowed})
	})
	return a, err
}

// Concurrent commits get seqs 1..n, each once, signed over the stored bytes;
// lookups by id and by range return exactly those bytes.
func testContiguousSignedSeqs(t *testing.T, b Backend) {
	s, _ := open(t, b)
	const n = 500
	var wg sync.WaitGroup
	seqs := make([]uint64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			a, err := appendOne(s, i)
			if err != nil {
				t.Error(err)
				return
			}
			seqs[i] = a.Receipt.Seq
			if r, err := receipt.Verify(a.Raw, Key().Public()); err != nil || r.Seq != a.Receipt.Seq {
				t.Errorf("appended %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for _, q := range seqs {
		if q < 1 || q > n || seen[q] {
			t.Fatalf("seq %d out of range or duplicated", q)
		}
		seen[q] = true
	}
	err := s.View(func(tx kernel.ReadTx) error {
		if tx.LastSeq() != n {
			return fmt.Errorf("LastSeq %d", tx.LastSeq())
		}
		count := 0
		err := tx.Receipts(1, n, func(seq uint64, raw []byte) bool {
			count++
			r, err := receipt.Verify(raw, Key().Public())
			if err != nil || r.Seq != seq {
				t.Errorf("seq %d: %v", seq, err)
				return true
			}
			byID, err := tx.Receipt(r.ID)
			if err != nil || string(byID) != string(raw) {
				t.Errorf("by id %s: %v", r.ID, err)
			}
			return true
		})
		if count != n {
			return fmt.Errorf("range visited %d of %d", count, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Stopping a range early stops it.
	visited := 0
	s.View(func(tx kernel.ReadTx) error {
		return tx.Receipts(10, n, func(uint64, []byte) bool { visited++; return visited < 5 })
	})
	if visited != 5 {
		t.Fatalf("early stop visited %d", visited)
	}
}

// A function that fails or panics fails alone: its writes and receipts
// vanish, its neighbours commit.
func testFailingFunctionsFailAlone(t *testing.T, b Backend) {
	s, _ := open(t, b)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	results := make([]error, 60)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = s.Update(context.Background(), func(tx kernel.Tx) error {
				tx.AppendReceipt(newReceipt(i))
				if err := tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("req-%d", i)}); err != nil {
					return err
				}
				if err := tx.SetCounter(fmt.Sprintf("c-%d", i), 1); err != nil {
					return err
				}
				switch i % 3 {
				case 1:
					return boom // wrote, then failed: its writes must vanish
				case 2:
					panic("guard exploded")
				}
				return nil
			})
		}(i)
	}
	wg.Wait()
	for i, err := range results {
		switch i % 3 {
		case 0:
			if err != nil {
				t.Errorf("%d: %v", i, err)
			}
		case 1:
			if !errors.Is(err, boom) {
				t.Errorf("%d: %v", i, err)
			}
		case 2:
			if err == nil {
				t.Errorf("%d: panic not reported", i)
			}
		}
	}
	s.View(func(tx kernel.ReadTx) error {
		if tx.LastSeq() != 20 {
			t.Errorf("LastSeq %d, want 20 (failed functions' receipts must not exist)", tx.LastSeq())
		}
		for i := range results {
			_, err := tx.Call(fmt.Sprintf("req-%d", i))
			if (i%3 == 0) != (err == nil) {
				t.Errorf("call %d presence wrong: %v", i, err)
			}
			n, _ := tx.Counter(fmt.Sprintf("c-%d", i))
			if (i%3 == 0) != (n == 1) {
				t.Errorf("counter %d = %d", i, n)
			}
		}
		return nil
	})
}

// A receipt that cannot be signed fails its own decision and never poisons
// the store.
func testUnsignableReceiptFailsAlone(t *testing.T, b Backend) {
	s, _ := open(t, b)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = s.Update(context.Background(), func(tx kernel.Tx) error {
				r := newReceipt(i)
				if i == 3 {
					r.Decision = receipt.Decision{Verdict: receipt.Deny} // deny without a guard cannot be signed
				}
				tx.AppendReceipt(r)
				return nil
			})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 3) != (err != nil) {
			t.Fatalf("%d: %v", i, err)
		}
	}
	if _, err := appendOne(s, 99); err != nil {
		t.Fatalf("store poisoned by one bad receipt: %v", err)
	}
}

// Everything committed survives Close and Open; seqs continue.
func testReopenKeepsEverything(t *testing.T, b Backend) {
	s, loc := open(t, b)
	for i := 0; i < 10; i++ {
		if _, err := appendOne(s, i); err != nil {
			t.Fatal(err)
		}
	}
	update(t, s, func(tx kernel.Tx) error { return tx.Revoke("cap-1", 5) })
	s.Close()
	s = reopen(t, b, loc, nil)
	a, err := appendOne(s, 10)
	if err != nil || a.Receipt.Seq != 11 {
		t.Fatalf("seq after reopen %v %v", a, err)
	}
	s.View(func(tx kernel.ReadTx) error {
		if ok, _ := tx.Revoked("cap-1"); !ok {
			t.Error("revocation lost")
		}
		if ok, _ := tx.Revoked("cap-2"); ok {
			t.Error("phantom revocation")
		}
		if c, err := tx.Call("req-3"); err != nil || c.Status != kernel.StatusAllowed {
			t.Errorf("call lost: %v", err)
		}
		return nil
	})
}

// Close commits what was queued: every acknowledged receipt is there after
// a reopen; the rest were refused, never half-done.
func testCloseDrainsQueue(t *testing.T, b Backend) {
	s, loc := open(t, b)
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{}
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if a, err := appendOne(s, i); err == nil {
				mu.Lock()
				acked[a.Receipt.ID] = true
				mu.Unlock()
			} else if !errors.Is(err, kernel.ErrUnavailable) {
				t.Error(err)
			}
		}(i)
	}
	time.Sleep(time.Millisecond)
	s.Close()
	wg.Wait()
	s = reopen(t, b, loc, nil)
	s.View(func(tx kernel.ReadTx) error {
		for id := range acked {
			if _, err := tx.Receipt(id); err != nil {
				t.Errorf("acknowledged %s lost: %v", id, err)
			}
		}
		return nil
	})
	if _, err := appendOne(s, 999); err != nil {
		t.Fatal(err)
	}
}

// With every committer held, exactly the calls beyond the queue's capacity
// fail, with ErrQueueFull; none is dropped.
func testFullQueueFailsClosed(t *testing.T, b Backend) {
	if b.QueueCapacity <= 0 {
		t.Skip("backend declares no queue capacity")
	}
	s, _ := open(t, b)
	release := make(chan struct{})
	var held sync.WaitGroup
	for c := 0; c < max(b.Committers, 1); c++ {
		started := make(chan struct{})
		held.Add(1)
		go func() {
			defer held.Done()
			s.Update(context.Background(), func(tx kernel.Tx) error {
				close(started)
				<-release // hold this committer so the queue fills
				return nil
			})
		}()
		<-started // one at a time: each lands on an idle committer
	}
	var wg sync.WaitGroup
	var nFull, nOK atomic.Int64
	for i := 0; i < b.QueueCapacity+50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(tx kernel.Tx) error { return nil })
			switch {
			case errors.Is(err, kernel.ErrQueueFull):
				nFull.Add(1)
			case err == nil:
				nOK.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	for nFull.Load() < 50 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	held.Wait()
	if nFull.Load() != 50 || nOK.Load()+nFull.Load() != int64(b.QueueCapacity+50) {
		t.Fatalf("full=%d ok=%d", nFull.Load(), nOK.Load())
	}
}
