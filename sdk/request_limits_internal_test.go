package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// hang answers nothing until the client gives up on the request.
func hang(w http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// The SDK's own per-request time limit is not the caller's deadline. A
// Confirm under context.Background() whose every attempt got no answer
// in time may have reached chiod: it is ErrOutcomeUnknown naming the
// request id (retry or await it), never ErrTimedOut ("the approval's
// deadline passed") and never context.DeadlineExceeded.
func TestConfirmWhoseRequestsGetNoAnswerIsOutcomeUnknownNotTimedOut(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 100 * time.Millisecond // stands for 60 s
	f := &fakeChiod{handlers: []http.HandlerFunc{hang}}
	_, err := testClient(t, f).Confirm(context.Background(), "Deploy?", nil, WithRequestID("run-3:deploy"))
	var ou *OutcomeUnknownError
	if errors.Is(err, ErrTimedOut) || errors.Is(err, context.DeadlineExceeded) ||
		!errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ou) || ou.RequestID != "run-3:deploy" {
		t.Fatalf("err %v (ErrTimedOut=%v, DeadlineExceeded=%v); want ErrOutcomeUnknown naming run-3:deploy",
			err, errors.Is(err, ErrTimedOut), errors.Is(err, context.DeadlineExceeded))
	}
	if n := f.count(); n != callAttempts {
		t.Fatalf("%d attempts, want %d", n, callAttempts)
	}
}

// The caller's own deadline passing before chiod answered is ErrTimedOut,
// and still context.DeadlineExceeded.
func TestConfirmPastTheCallersDeadlineIsTimedOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	f := &fakeChiod{handlers: []http.HandlerFunc{hang}}
	_, err := testClient(t, f).Confirm(ctx, "Deploy?", nil)
	if !errors.Is(err, ErrTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v; want ErrTimedOut", err)
	}
}

// An Await whose long-polls keep getting no answer in time reconnects
// until the caller's deadline, and then (only then) is ErrTimedOut.
func TestAwaitThroughSilentPollsTimesOutOnlyAtTheCallersDeadline(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 100 * time.Millisecond
	f := &fakeChiod{handlers: []http.HandlerFunc{hang}}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	_, err := testClient(t, f).Await(ctx, "run-4:deploy")
	if !errors.Is(err, ErrTimedOut) || ctx.Err() == nil {
		t.Fatalf("err %v before the caller's deadline; want ErrTimedOut at it", err)
	}
	if n := f.count(); n < 2 {
		t.Fatalf("%d polls; want reconnects", n)
	}
}

// count is how many requests f has seen.
func (f *fakeChiod) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}
