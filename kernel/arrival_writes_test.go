package kernel_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// arrivalCounter is a store shared like PostgreSQL's as far as votes'
// arrivals go (kernel.SharedArrivals): each arrival is a write there,
// counted here.
type arrivalCounter struct {
	kernel.Store
	mu      sync.Mutex
	next    int64
	live    map[int64]string
	arrived atomic.Int32
}

func (a *arrivalCounter) ArriveVote(_ context.Context, approvalID string) (int64, error) {
	a.arrived.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	a.live[a.next] = approvalID
	return a.next, nil
}

func (a *arrivalCounter) ArrivedAt(context.Context, int64, int64) error { return nil }

func (a *arrivalCounter) EndArrival(_ context.Context, id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.live, id)
}

func (a *arrivalCounter) VotesArriving(_ context.Context, approvalID string, _ int64) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.live {
		if id == approvalID {
			return true, nil
		}
	}
	return false, nil
}

// The respond route needs no credential but the token, and a vote's
// arrival is written to a shared store before the vote is judged. A token
// no approver of the request signed — a stranger's, or one naming an
// approver but signed by another key — is refused whatever happens next,
// so it must cost no write: otherwise anyone who knows a request id can
// make the database write three rows per POST, and a real request answers
// slower than a missing one (which id exists). An approver's vote still
// arrives.
func TestARefusedStrangersTokenCostsNoArrivalWrite(t *testing.T) {
	counter := &arrivalCounter{live: map[int64]string{}}
	f := lifecycleOn(t, "deny", nil, func(s kernel.Store) kernel.Store { counter.Store = s; return counter })
	out := f.refund(t, 450)
	ctx := context.Background()
	id := out.ApprovalRequestID
	stranger := f.token(t, id, outsider, "approved", nil)
	forged := f.token(t, id, outsider, "approved", func(tok *approval.Token) { tok.Approver = financeLead.Public().String() })
	for name, tok := range map[string][]byte{"a stranger's token": stranger, "a token naming the lead, signed by a stranger": forged} {
		if _, err := f.k.Respond(ctx, id, tok, "", ""); err == nil {
			t.Fatalf("%s was accepted", name)
		}
		if n := counter.arrived.Load(); n != 0 {
			t.Fatalf("%s, refused, cost %d arrival writes in the shared store", name, n)
		}
	}
	if _, err := f.k.Respond(ctx, id, f.token(t, id, financeLead, "approved", nil), "", ""); err != nil {
		t.Fatal(err)
	}
	if n := counter.arrived.Load(); n != 1 {
		t.Fatalf("the lead's vote made %d arrivals, want 1", n)
	}
	if r, _ := f.k.Approval(id); r.Status != approval.StatusApproved {
		t.Fatalf("the lead's vote left the request %s", r.Status)
	}
}
