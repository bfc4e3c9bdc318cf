package httpapi

import "testing"

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
