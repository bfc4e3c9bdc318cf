package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/kernel"
)

// recorder is a Subscriber that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	events []kernel.Event
	resets int
	wanted bool
}

func (r *recorder) PublishRemote(e kernel.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}
func (r *recorder) ResetSubscribers()    { r.mu.Lock(); r.resets++; r.mu.Unlock() }
func (r *recorder) HasSubscribers() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.wanted }

func (r *recorder) snapshot() []kernel.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kernel.Event(nil), r.events...)
}

// openLease is the lease of the stores openPG opens.
const openLease = 2 * time.Second

func openPG(t *testing.T, dsn string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Options{DSN: dsn, Key: storetest.Key(), Lease: openLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// An event relayed by one replica reaches the other's subscribers with the
// state read from the database, not its own; nobody listening reads nothing.
func TestBusRelaysEventsBetweenReplicas(t *testing.T) {
	dsn := pgtest.Database(t)
	a, b := openPG(t, dsn), openPG(t, dsn)
	ra, rb := &recorder{wanted: true}, &recorder{wanted: true}
	a.Events().Attach(ra)
	b.Events().Attach(rb)
	req := &approval.Request{ApprovalID: approval.NewRequestID(), Status: approval.StatusPending, Summary: "pay 5", Votes: []approval.Vote{}}
	if err := a.Update(context.Background(), func(tx kernel.Tx) error {
		if err := tx.PutCall(&kernel.CallRecord{RequestID: "ev-1", Status: kernel.StatusAllowed, ReceiptID: "rc-x"}); err != nil {
			return err
		}
		return tx.PutApproval(req)
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // both listeners are up
	a.Events().Relay(kernel.Event{Type: kernel.EventApprovalRequested, Approval: req})
	a.Events().Relay(kernel.Event{Type: kernel.EventCallCompleted, Call: &kernel.Outcome{RequestID: "ev-1"}})
	deadline := time.Now().Add(10 * time.Second)
	for len(rb.snapshot()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("replica b got %d events", len(rb.snapshot()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	got := rb.snapshot()
	if got[0].Type != kernel.EventApprovalRequested || got[0].Approval.Summary != "pay 5" ||
		got[1].Type != kernel.EventCallCompleted || got[1].Call.ReceiptID != "rc-x" || got[1].Call.Status != kernel.StatusAllowed {
		t.Fatalf("events %+v %+v", got[0], got[1])
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(ra.snapshot()); n != 0 {
		t.Fatalf("the sender got its own %d events back", n)
	}
}
