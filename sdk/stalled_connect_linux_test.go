package chio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/testkit"
)

// stalledPort: testkit.StalledConnectAddr.
func stalledPort(t *testing.T) string { return testkit.StalledConnectAddr(t) }

// The caller's deadline ends the call while its TCP connect is still
// pending (the listener never completes it): nothing was sent.
func TestCallToolDeadlineDuringConnectIsNotSent(t *testing.T) {
	c := clientAt(t, "http://"+stalledPort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, Call{Server: "pay", Tool: "issue_refund", RequestID: "req-connect-deadline"})
	notSentFor(t, err, "req-connect-deadline")
}

// A connect that never completes is given up after the connect timeout
// and, as it wrote nothing, the call is not sent: retried under the same
// id, and reported as ErrNotSent naming the connect timeout, with no
// deadline of the caller's involved.
func TestCallToolConnectTimeoutIsNotSent(t *testing.T) {
	k := clientAt(t, "http://127.0.0.1:1") // for its key and capability
	c, err := NewClient("http://"+stalledPort(t), WithKey(*k.key), WithCapability(k.capRaw),
		WithConnectTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-connect-timeout"})
	if errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a call never sent reads as outcome unknown: %v", err)
	}
	var ns *NotSentError
	if !errors.As(err, &ns) || ns.RequestID != "req-connect-timeout" || !errors.Is(err, errConnectTimeout) {
		t.Fatalf("err = %v, want a *NotSentError for req-connect-timeout naming the connect timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the connect timeout reads as the caller's deadline: %v", err)
	}
	// Four attempts of 150 ms and 1.75 s of backoff: not the transport's own
	// 30 s dial timeout.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v: the connect timeout was not applied", d)
	}
}
