package cli_test

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// fakeChiodAnswering serves c's answer on a loopback listener to every
// request and counts them; for a refused case it returns a URL nothing
// listens on.
func fakeChiodAnswering(t *testing.T, c *testkit.CallOutcomeCase) (url string, requests *atomic.Int32) {
	t.Helper()
	if c.Refused {
		return freeURL(t), new(atomic.Int32)
	}
	addr, requests := testkit.ServeCanned(t, c.Answer.Raw())
	return "http://" + addr, requests
}

// checkCallOutcome holds chio call's exit code and stderr to outcome, the
// fixture's word for what the SDKs report. None of these is an outcome
// of the call: every one exits 1. One the SDKs call outcome_unknown names
// the request id as possibly run; not_sent says the call was not sent; a
// refusal by chiod (bad_request, unauthorized, conflict) names chiod's
// error and never says the call may have run.
func checkCallOutcome(t *testing.T, outcome, requestID, so, se string, code int) {
	t.Helper()
	if code != cli.ExitError {
		t.Fatalf("exit %d, want %d (the SDKs: %s)\nstdout %q\nstderr %q", code, cli.ExitError, outcome, so, se)
	}
	mayHaveRun := strings.Contains(se, "request id: "+requestID) && strings.Contains(se, "may have run")
	switch outcome {
	case "outcome_unknown":
		if !mayHaveRun {
			t.Fatalf("stderr %q does not name request %s as possibly run (the SDKs: outcome_unknown)", se, requestID)
		}
	case "not_sent":
		if mayHaveRun || !strings.Contains(se, "the call was not sent") {
			t.Fatalf("stderr %q does not say the call was not sent", se)
		}
	case "bad_request", "unauthorized", "conflict":
		if mayHaveRun || !strings.Contains(se, outcome) {
			t.Fatalf("stderr %q does not report chiod's %s", se, outcome)
		}
	}
}

// chio call reads chiod's answers to a call with its own code, not the Go
// SDK's: it is held to the same shared cases, through a fake chiod on
// loopback. A case the SDKs report as outcome unknown or an error must
// never read as allowed (0), pending (3) or denied (4) — "denied" tells a
// script the call did not run and is safe to send again. A succeeded case
// exits 0 and prints the tool's output as the tool sent it.
func TestCallOutcomesSharedWithTheSDKs(t *testing.T) {
	cases := testkit.LoadCallOutcomes(t, filepath.Join("..", "..", "testdata", "sdk", "call_outcomes.json"))
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			url, requests := fakeChiodAnswering(t, &c)
			// The fixture's answers name the call req-outcome.
			so, se, code := chio(inflightAgent(t, url), "call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-outcome")
			if c.Outcome == "succeeded" {
				// The tool's output, printed as the tool sent it.
				if code != cli.ExitOK || so != c.Output+"\n" {
					t.Fatalf("exit %d, stdout %q, want 0 and the tool's output %q\nstderr %q", code, so, c.Output, se)
				}
			} else {
				checkCallOutcome(t, c.Outcome, "req-outcome", so, se, code)
			}
			if n := requests.Load(); n != c.Attempts {
				t.Fatalf("%d requests reached the listener, want %d", n, c.Attempts)
			}
		})
	}
}

// An answer to a call whose "error" member names an error is chiod's
// error, not an outcome, whatever else it carries (the SDKs raise it as an
// API error): a "denied" beside it must not read as a denial (exit 4: did
// not run), nor an "allowed" as success. One naming outcome_unknown says
// the call may have run, as the SDKs' ErrOutcomeUnknown does.
func TestCallAnswerNamingAnErrorIsNotAnOutcome(t *testing.T) {
	for _, c := range []struct {
		name    string
		status  int
		body    string
		outcome string
		says    string
	}{
		{"a 403 denial with an error", 403,
			`{"error":"x","message":"m","status":"denied","request_id":"req-outcome","reason":"no","guard":"g","receipt_id":"rc-1"}`,
			"other", "x (403): m"},
		{"a 200 allow with an error", 200,
			`{"error":"x","message":"m","status":"allowed","request_id":"req-outcome","receipt_id":"rc-1","output":{"refund":"re_99"}}`,
			"other", "x (200): m"},
		{"a 202 pending with an error", 202,
			`{"error":"conflict","message":"m","status":"pending_approval","request_id":"req-outcome","approval_request_id":"ar-1","deadline":4102444800}`,
			"conflict", "conflict (202): m"},
		{"a 403 denial with outcome_unknown", 403,
			`{"error":"outcome_unknown","message":"m","status":"denied","request_id":"req-outcome","reason":"no","guard":"g","receipt_id":"rc-1"}`,
			"outcome_unknown", "outcome_unknown (403): m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			oc := testkit.CallOutcomeCase{Answer: &testkit.CannedAnswer{Status: c.status, Body: c.body}}
			url, requests := fakeChiodAnswering(t, &oc)
			so, se, code := chio(inflightAgent(t, url), "call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-outcome")
			checkCallOutcome(t, c.outcome, "req-outcome", so, se, code)
			if !strings.Contains(se, c.says) {
				t.Fatalf("stderr %q does not report chiod's error %q", se, c.says)
			}
			if n := requests.Load(); n != 1 {
				t.Fatalf("%d requests reached the listener, want 1 (not retried)", n)
			}
		})
	}
}
