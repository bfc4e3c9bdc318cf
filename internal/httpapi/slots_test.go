package httpapi

import "testing"

func TestWaiterLimitPerAgent(t *testing.T) {
	var w waiterLimit
	for i := 0; i < MaxWaitsPerAgent; i++ {
		if !w.acquire("agent-a") {
			t.Fatalf("wait %d refused", i)
		}
	}
	if w.acquire("agent-a") {
		t.Fatal("one agent exceeded its cap")
	}
	if !w.acquire("agent-b") {
		t.Fatal("another agent was refused")
	}
	w.release("agent-a")
	if !w.acquire("agent-a") {
		t.Fatal("released slot not reusable")
	}
}
