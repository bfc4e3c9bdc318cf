package httpapi

import (
	"context"
	"runtime"
	"testing"
	"time"
)

func TestSlotsPerKey(t *testing.T) {
	var s slots
	for i := 0; i < MaxWaitsPerAgent; i++ {
		if !s.acquire("agent-a", MaxWaitsPerAgent) {
			t.Fatalf("wait %d refused", i)
		}
	}
	if s.acquire("agent-a", MaxWaitsPerAgent) {
		t.Fatal("one agent exceeded its cap")
	}
	if !s.acquire("agent-b", MaxWaitsPerAgent) {
		t.Fatal("another agent was refused")
	}
	s.release("agent-a")
	if !s.acquire("agent-a", MaxWaitsPerAgent) {
		t.Fatal("released slot not reusable")
	}
	for i := 0; i < MaxWaitsPerAgent; i++ {
		s.release("agent-a")
	}
	s.release("agent-b")
	if len(s.n) != 0 || s.held("agent-a") != 0 {
		t.Fatalf("released keys are remembered: %v", s.n)
	}
}

// acquireWithin takes a slot released while it waits, gives up when its
// request or the server ends, and leaves nothing behind once key is free.
func TestSlotsAcquireWithin(t *testing.T) {
	var s slots
	ctx := context.Background()
	stop := make(chan struct{})
	s.acquire("cred", 1)
	got := make(chan bool)
	go func() { got <- s.acquireWithin(ctx, stop, "cred", 1, time.Hour) }()
	waiting := func() { // the waiter is parked on key's release
		for {
			s.mu.Lock()
			n := len(s.freed)
			s.mu.Unlock()
			if n == 1 {
				return
			}
			runtime.Gosched()
		}
	}
	waiting()
	s.release("cred")
	if !<-got || s.held("cred") != 1 {
		t.Fatal("a slot released during the wait was not taken")
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { got <- s.acquireWithin(cctx, stop, "cred", 1, time.Hour) }()
	waiting()
	cancel()
	if <-got {
		t.Fatal("acquired after the request ended")
	}
	go func() { got <- s.acquireWithin(ctx, stop, "cred", 1, time.Hour) }()
	close(stop)
	if <-got {
		t.Fatal("acquired after shutdown")
	}
	if s.acquireWithin(ctx, nil, "cred", 1, time.Millisecond) {
		t.Fatal("acquired a taken slot after the wait")
	}
	s.release("cred")
	if len(s.n) != 0 || len(s.freed) != 0 {
		t.Fatalf("a free key is remembered: %v %v", s.n, s.freed)
	}
}

// The requests waiting for one key's slots are as bounded as the slots
// themselves: while max of them wait, another is refused at once instead
// of holding its connection and handler for the whole wait. (A retry
// right after a cut export waits; a flood of exports of one credential
// does not pile up behind it.)
func TestSlotsAcquireWithinBoundsWaiters(t *testing.T) {
	var s slots
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.acquire("cred", 1)
	first := make(chan bool)
	go func() { first <- s.acquireWithin(ctx, nil, "cred", 1, time.Hour) }()
	for { // the first waiter is parked on key's release
		s.mu.Lock()
		n := len(s.freed)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	second := make(chan bool)
	go func() { second <- s.acquireWithin(ctx, nil, "cred", 1, time.Hour) }()
	select {
	case ok := <-second:
		if ok {
			t.Fatal("a second waiter took a slot that is held")
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-second
		t.Fatal("a second request waited for one credential's slot while another already waited")
	}
	s.release("cred")
	if !<-first {
		t.Fatal("the first waiter did not take the released slot")
	}
	s.release("cred")
	if len(s.n) != 0 || len(s.freed) != 0 {
		t.Fatalf("a free key is remembered: %v %v", s.n, s.freed)
	}
}
