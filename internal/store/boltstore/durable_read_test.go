package boltstore_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/kernel"
)

// A reader never sees a commit before the store holds it durable. bbolt
// writes a commit's meta page, where new read transactions find it, before
// its last fsync: a GET could show a decision, and a client keep a signed
// receipt, that a power cut then takes back (and whose seq the next commit
// gives to another receipt). That window inside bbolt cannot be held open
// from a test; the hook holds the committer right after bbolt's Commit
// returns, before the store has recorded the commit as durable, which is
// the same window as far as a reader can tell.
func TestReadersDoNotSeeACommitBeforeItIsDurable(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "d.db"), testKey(), boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	boltstore.SetAfterWriteForTest(s, func() {
		once.Do(func() {
			close(entered)
			<-release
		})
	})
	committed := make(chan error, 1)
	go func() {
		committed <- s.Update(context.Background(), func(tx kernel.Tx) error {
			tx.AppendReceipt(newReceipt(1))
			return tx.PutCall(&kernel.CallRecord{RequestID: "req-durable", Server: "demo", Tool: "t"})
		})
	}()
	<-entered
	seen := make(chan bool, 1)
	go func() {
		var found bool
		err := s.View(func(tx kernel.ReadTx) error {
			c, err := tx.Call("req-durable")
			found = err == nil && c != nil
			return nil
		})
		seen <- err == nil && found
	}()
	select {
	case found := <-seen:
		close(release)
		t.Fatalf("a reader's transaction ended (found the call: %v) while the commit was not yet durable", found)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	select {
	case found := <-seen:
		if !found {
			t.Fatal("once durable, the reader did not see the committed call")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader never finished after the commit became durable")
	}
}
