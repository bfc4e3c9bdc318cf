package boltstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

func testKey() keys.PrivateKey { return keys.FromSeed(make([]byte, 32)) }

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path, testKey(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newReceipt(i int) *receipt.Receipt {
	return &receipt.Receipt{ID: fmt.Sprintf("rc-%d", i), Timestamp: int64(i), RequestID: fmt.Sprintf("req-%d", i),
		Decision: receipt.Decision{Verdict: receipt.Allow}}
}

func appendOne(s *Store, i int) (*kernel.Appended, error) {
	var a *kernel.Appended
	err := s.Update(context.Background(), func(tx kernel.Tx) error {
		a = tx.AppendReceipt(newReceipt(i))
		return tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("req-%d", i), Status: kernel.StatusAllowed})
	})
	return a, err
}

func TestConcurrentUpdatesGetContiguousSignedSeqs(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "c.db"))
	defer s.Close()
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
			if _, err := receipt.Verify(a.Raw, testKey().Public()); err != nil {
				t.Error(err)
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
	// Stored bytes are exactly the signed bytes and the id index points at them.
	err := s.View(func(tx kernel.ReadTx) error {
		if tx.LastSeq() != n {
			return fmt.Errorf("LastSeq %d", tx.LastSeq())
		}
		count := 0
		return tx.Receipts(1, n, func(seq uint64, raw []byte) bool {
			count++
			r, err := receipt.Verify(raw, testKey().Public())
			if err != nil || r.Seq != seq {
				t.Errorf("seq %d: %v", seq, err)
			}
			byID, err := tx.Receipt(r.ID)
			if err != nil || string(byID) != string(raw) {
				t.Errorf("by id %s: %v", r.ID, err)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFailingAndPanickingFunctionsFailAlone(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "f.db"))
	defer s.Close()
	boom := errors.New("boom")
	var wg sync.WaitGroup
	results := make([]error, 60)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = s.Update(context.Background(), func(tx kernel.Tx) error {
				tx.AppendReceipt(newReceipt(i))
				tx.PutCall(&kernel.CallRecord{RequestID: fmt.Sprintf("req-%d", i)})
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
		}
		return nil
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.db")
	s := open(t, path)
	for i := 0; i < 10; i++ {
		if _, err := appendOne(s, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Update(context.Background(), func(tx kernel.Tx) error { return tx.Revoke("cap-1", 5) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
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
		return nil
	})
}

func TestCloseDrainsQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	s := open(t, path)
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
	s.Close()
	wg.Wait()
	s = open(t, path)
	defer s.Close()
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

func TestFullQueueFailsClosed(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "q.db"))
	defer s.Close()
	release := make(chan struct{})
	blocked := make(chan struct{})
	go s.Update(context.Background(), func(tx kernel.Tx) error {
		close(blocked)
		<-release // hold the committer so the queue fills
		return nil
	})
	<-blocked
	var wg sync.WaitGroup
	var nFull, nOK int64
	var mu sync.Mutex
	for i := 0; i < QueueCapacity+50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(tx kernel.Tx) error { return nil })
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, kernel.ErrQueueFull) {
				nFull++
			} else if err == nil {
				nOK++
			} else {
				t.Error(err)
			}
		}()
	}
	// Exactly the overflow fails while the committer is held; then release.
	for {
		mu.Lock()
		f := nFull
		mu.Unlock()
		if f >= 50 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if nFull != 50 || nOK+nFull != QueueCapacity+50 {
		t.Fatalf("full=%d ok=%d", nFull, nOK)
	}
}

func TestUnsignableReceiptFailsOnlyItsDecision(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "u.db"))
	defer s.Close()
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

// Calls queued while a transaction is being built join it (absorb), keep
// consecutive seqs, and one of them failing fails only itself.
func TestQueuedWhileBuildingJoinTheCommit(t *testing.T) {
	var mu sync.Mutex
	var batches []int
	s, err := Open(filepath.Join(t.TempDir(), "a.db"), testKey(), Options{AbsorbWindow: time.Hour, Observe: func(n int, _ time.Duration) {
		mu.Lock()
		batches = append(batches, n)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var first *kernel.Appended
	started := make(chan struct{})
	var once sync.Once // a rebuild runs the function again
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- s.Update(context.Background(), func(tx kernel.Tx) error {
			first = tx.AppendReceipt(newReceipt(1))
			once.Do(func() {
				close(started)
				for s.QueueDepth() < 2 {
					time.Sleep(time.Millisecond)
				}
			})
			return nil
		})
	}()
	<-started
	errBad := errors.New("refused")
	results := make(chan error, 2)
	var ok *kernel.Appended
	go func() {
		results <- s.Update(context.Background(), func(tx kernel.Tx) error { tx.AppendReceipt(newReceipt(2)); return errBad })
	}()
	for s.QueueDepth() < 1 {
		time.Sleep(time.Millisecond)
	}
	go func() {
		results <- s.Update(context.Background(), func(tx kernel.Tx) error { ok = tx.AppendReceipt(newReceipt(3)); return nil })
	}()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	var errs []error
	for range 2 {
		errs = append(errs, <-results)
	}
	if !(errors.Is(errs[0], errBad) && errs[1] == nil || errors.Is(errs[1], errBad) && errs[0] == nil) {
		t.Fatalf("results %v: want the failing call refused alone", errs)
	}
	if first.Receipt.Seq != 1 || ok.Receipt.Seq != 2 {
		t.Fatalf("seqs %d, %d: want 1, 2", first.Receipt.Seq, ok.Receipt.Seq)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 1 || batches[0] != 2 {
		t.Fatalf("commits carried %v calls: want one commit of the two that succeeded", batches)
	}
	for _, a := range []*kernel.Appended{first, ok} {
		if _, err := receipt.Verify(a.Raw, testKey().Public()); err != nil {
			t.Fatal(err)
		}
	}
}
