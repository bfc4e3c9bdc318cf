package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/receipt"
)

func newReceipt(i int) *receipt.Receipt {
	return &receipt.Receipt{ID: fmt.Sprintf("rc-%d", i), Timestamp: int64(i), RequestID: fmt.Sprintf("req-%d", i),
		Decision: receipt.Decision{Verdict: receipt.Allow}}
}

// Calls queued while a transaction is being built join it (absorb), keep
// consecutive seqs, and one of them failing fails only itself.
func TestQueuedWhileBuildingJoinTheCommit(t *testing.T) {
	var mu sync.Mutex
	var batches []int
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "a.db"), testKey(), boltstore.Options{AbsorbWindow: time.Hour, Observe: func(c boltstore.CommitStats) {
		mu.Lock()
		batches = append(batches, c.Calls)
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

// Each commit reports where its time went: a function that takes 20 ms
// shows in Run, its receipt in Sign and Receipts, the commit in Write, and
// the phases add up to no more than the whole.
func TestCommitStatsSayWhereTheTimeWent(t *testing.T) {
	got := make(chan boltstore.CommitStats, 8)
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), testKey(), boltstore.Options{Observe: func(c boltstore.CommitStats) { got <- c }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Update(context.Background(), func(tx kernel.Tx) error {
		time.Sleep(20 * time.Millisecond)
		tx.AppendReceipt(newReceipt(1))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := <-got
	if c.Calls != 1 || c.Run < 20*time.Millisecond || c.Sign <= 0 || c.Receipts <= 0 || c.Write <= 0 {
		t.Fatalf("stats %+v", c)
	}
	if sum := c.Run + c.Sign + c.Receipts + c.Write; sum > c.Total {
		t.Fatalf("phases add up to %v, more than the whole %v: %+v", sum, c.Total, c)
	}
}
