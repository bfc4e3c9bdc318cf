package kernel_test

import (
	"errors"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// execution "not_delivered" promises the tool certainly never saw the call
// (an agent may redo it). A call whose first attempt may have reached the
// tool (a timeout) and whose later attempts are refused "busy" (503, as
// sdk/toolserver.Dedupe answers while a slow handler still runs the first)
// is "unknown": it used to be classified by its last attempt alone.
func TestMaybeDeliveredThenBusyIsUnknown(t *testing.T) {
	maybe := &kernel.DeliveryError{Err: errors.New("context deadline exceeded (the tool is still running)"), Retryable: true}
	busy := &kernel.DeliveryError{Err: errors.New("http 503: a delivery of this Idempotency-Key is in progress"), NotDelivered: true, Retryable: true}
	script := []error{maybe}
	for i := 0; i < 1000; i++ {
		script = append(script, busy)
	}
	tool := &scriptedTool{script: script}
	w := newWAWorld(t, tool)
	out := w.Submit(t, "echo", `{"a":1}`, "") // echo: at_least_once, 2 s retry deadline
	if n := len(tool.deliveries(out.RequestID)); n < 2 {
		t.Fatalf("only %d deliveries", n)
	}
	if out.Execution == kernel.ExecutionNotDelivered {
		t.Fatalf("first attempt may have reached the tool, yet the call is settled %q (%s)", out.Execution, out.ToolError)
	}
	if out.Execution != kernel.ExecutionUnknown {
		t.Fatalf("execution %q, want %q", out.Execution, kernel.ExecutionUnknown)
	}
}

// A call that kills its server mid-call (the MCP peer's "die") used to be
// re-sent at every reconnect until the retry deadline: each re-send killed
// the server again, keeping it down for every other call. Attempts that
// may have reached the tool are capped; attempts that certainly did not
// (the server not connected) do not count towards the cap.
func TestPoisonCallIsNotResentForever(t *testing.T) {
	maybe := &kernel.DeliveryError{Err: errors.New("mcp server \"peer\": calling \"tools/call\": EOF"), Retryable: true}
	down := &kernel.DeliveryError{Err: errors.New("mcp server \"peer\" is not connected"), NotDelivered: true, Retryable: true}
	script := []error{}
	for i := 0; i < 1000; i++ {
		script = append(script, maybe)
	}
	tool := &scriptedTool{script: script}
	w := newWAWorld(t, tool)
	out := w.Submit(t, "echo", `{"a":1}`, "") // echo: at_least_once, 2 s retry deadline
	if n := len(tool.deliveries(out.RequestID)); n != kernel.MaxMaybeReachedAttempts {
		t.Fatalf("%d deliveries of a call that ends mid-call every time, want %d", n, kernel.MaxMaybeReachedAttempts)
	}
	if out.Execution != kernel.ExecutionUnknown {
		t.Fatalf("execution %q, want %q (%s)", out.Execution, kernel.ExecutionUnknown, out.ToolError)
	}

	// Refusals that certainly did not reach the tool do not use up the cap.
	tool2 := &scriptedTool{script: []error{maybe, down, maybe}}
	w2 := newWAWorld(t, tool2)
	out = w2.Submit(t, "echo", `{"a":2}`, "")
	if n := len(tool2.deliveries(out.RequestID)); n != 4 || out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("%d deliveries, execution %q (%s); want 4, succeeded", n, out.Execution, out.ToolError)
	}
}
