package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// Await long-polls: each GET asks chiod to hold the answer until the call
// changes or the wait passes. An answer that comes back at once with the
// call still pending (a proxy or cache that drops or ignores ?wait=, a
// chiod answering while it shuts down) must be followed by a pause (the
// reconnect backoff), as a failed poll is, not by the next poll at once:
// a tight loop of signed requests for as long as Await waits (forever
// without a deadline). As the Python SDK's await_approval.
func TestAwaitDoesNotPollInATightLoopWhenAnsweredAtOnce(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{
		reply(200, `{"status":"pending_approval","request_id":"req-p","approval_request_id":"ar-p","deadline":4102444800}`),
	}}
	c := testClient(t, f)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Await(ctx, "req-p"); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("err %v, want ErrTimedOut", err)
	}
	// With the backoff (0.25 s doubling) 3 s hold at most 5 polls; without
	// it, one poll per round trip.
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.paths); n > 10 {
		t.Fatalf("%d polls in 3 s, each answered at once with the call pending", n)
	}
}
