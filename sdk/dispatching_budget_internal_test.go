package chio

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// spentDeadline is a context whose deadline has passed but whose timer has
// not fired yet: Done is still open and Err is nil, as for an instant after
// any real deadline.
type spentDeadline struct{ context.Context }

func (spentDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A retry that meets its call allowed and still running waits for it with
// Await. When the caller's deadline leaves Await no time for another poll
// before ctx itself reports it, Await says ErrTimedOut; CallTool passed that
// through inside its OutcomeUnknownError, so the error matched ErrTimedOut
// ("no decision was made") for a call that was allowed and may have run.
// It showed as TestDispatchingCallOutlivingTheContextIsOutcomeUnknown
// failing now and then under load.
func TestDispatchingCallAtTheDeadlineIsNotTimedOut(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(202, `{"status":"dispatching","request_id":"run-9:deploy"}`)}}
	c := testClient(t, f)
	_, err := c.CallTool(spentDeadline{context.Background()}, Call{Server: "pay", Tool: "deploy", RequestID: "run-9:deploy"})
	var ou *OutcomeUnknownError
	if !errors.As(err, &ou) || ou.RequestID != "run-9:deploy" || errors.Is(err, ErrTimedOut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v (ErrTimedOut=%v), want an *OutcomeUnknownError for run-9:deploy that is the caller's deadline, not ErrTimedOut",
			err, errors.Is(err, ErrTimedOut))
	}
}
