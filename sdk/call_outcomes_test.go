package chio

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
)

// outcomeOf names err as the fixture does.
func outcomeOf(err error) string {
	switch {
	case errors.Is(err, ErrNotSent): // before ErrUnavailable, which it also matches
		return "not_sent"
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, ErrConflict):
		return "conflict"
	}
	return "other"
}

// testdata/sdk/call_outcomes.json is shared with the Python and TypeScript
// SDKs' tests and `chio call`'s (testkit.CallOutcomeCase): what a call
// reports when every attempt meets the same answer or transport failure.
func TestCallOutcomesSharedWithTheOtherSDKs(t *testing.T) {
	cases := testkit.LoadCallOutcomes(t, filepath.Join("testdata", "sdk", "call_outcomes.json")) // TestMain runs from the repository root
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			addr, requests := closedPort(t), new(atomic.Int32)
			if !tc.Refused {
				addr, requests = testkit.ServeCanned(t, tc.Answer.Raw())
			}
			c := clientAt(t, "http://"+addr)
			res, err := c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-outcome"})
			got := outcomeOf(err)
			a, allowed := res.(*Allowed)
			if err == nil && allowed && !a.Failed() {
				got = "succeeded"
			}
			if got != tc.Outcome {
				t.Fatalf("outcome %s, want %s: %v (result %+v)", got, tc.Outcome, err, res)
			}
			if got == "succeeded" && string(a.Output) != tc.Output {
				t.Fatalf("output %s, want the tool's bytes %s", a.Output, tc.Output)
			}
			if n := requests.Load(); n != tc.Attempts {
				t.Fatalf("%d requests reached the listener, want %d", n, tc.Attempts)
			}
		})
	}
}
