package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// A call whose answer was lost may have run. Even when later attempts meet
// chiod's own 503 ("nothing was allowed" — by THAT attempt), CallTool's
// error is ErrOutcomeUnknown naming the request id, never ErrUnavailable.
func TestCallToolAfterALostAnswerIsOutcomeUnknownNotUnavailable(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{drop, reply(503, `{"error":"unavailable","message":"store busy"}`)}}
	_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "run-1:pay"})
	var ou *OutcomeUnknownError
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrUnavailable) || !errors.As(err, &ou) || ou.RequestID != "run-1:pay" {
		t.Fatalf("err %v; want ErrOutcomeUnknown naming run-1:pay, not ErrUnavailable", err)
	}
	if len(f.bodies) != callAttempts {
		t.Fatalf("%d attempts", len(f.bodies))
	}
}

// Every answer lost: ErrOutcomeUnknown with the request id, so the caller
// can retry it under the same id or await it.
func TestCallToolWithEveryAnswerLostNamesItsRequestID(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"dropped":     drop,
		"gateway 504": reply(504, `<html>Gateway Timeout</html>`),
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{h}}
		_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo"})
		var ou *OutcomeUnknownError
		if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrUnavailable) || !errors.As(err, &ou) || ou.RequestID == "" {
			t.Fatalf("%s: err %v", name, err)
		}
	}
}

// chiod's own 503 on every attempt, nothing lost: ErrUnavailable.
func TestCallToolThatChiodCouldNotDecideIsUnavailable(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(503, `{"error":"unavailable","message":"down"}`)}}
	_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo"})
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("err %v", err)
	}
}

// A cancelled context while an attempt was in flight: the call may have
// run. The error says so and still matches context.Canceled.
func TestCallToolCancelledInFlightIsOutcomeUnknown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeChiod{handlers: []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	}}}
	_, err := testClient(t, f).CallTool(ctx, Call{Server: "demo", Tool: "echo"})
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

// A connection that died silently (no answer, no reset) is given up after
// the per-request timeout even under context.Background(), and the call
// re-sent with the same body (same request id).
func TestCallToolGivesUpASilentConnectionAndRetriesTheSameID(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 300 * time.Millisecond
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}
	f := &fakeChiod{handlers: []http.HandlerFunc{hang, reply(200, `{"status":"allowed","request_id":"req-x","receipt_id":"rc-1","output":{"ok":true}}`)}}
	done := make(chan error, 1)
	go func() {
		_, err := testClient(t, f).CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: "req-x"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("CallTool hung on a silent connection")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) != 2 || f.bodies[0] != f.bodies[1] {
		t.Fatalf("want 2 identical attempts, got %d", len(f.bodies))
	}
}
