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
