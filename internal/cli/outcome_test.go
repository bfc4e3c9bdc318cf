package cli

import (
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A guard is not a person: the words say which decided.
func TestResolutionText(t *testing.T) {
	for _, c := range []struct {
		res  approval.Resolution
		want string
	}{
		{approval.Resolution{Outcome: "denied", Guard: kernel.GuardHumanApproval, DecidedBy: "CFO", Reason: "duplicate refund"}, "denied by CFO: duplicate refund"},
		{approval.Resolution{Outcome: "denied", Guard: kernel.GuardCapability, Reason: "capability revoked during the wait"}, "denied by the capability guard: capability revoked during the wait"},
		{approval.Resolution{Outcome: "denied", Guard: kernel.GuardApprovalTimeout, Reason: "no decision within 3600s"}, "denied by the approval deadline: no decision within 3600s"},
		{approval.Resolution{Outcome: "denied", Reason: "no"}, "denied: no"},
		{approval.Resolution{Outcome: "approved", DecidedBy: "Finance Lead", CallStatus: kernel.StatusAllowed}, "approved by Finance Lead: executed"},
		{approval.Resolution{Outcome: "approved", DecidedBy: "Finance Lead", CallStatus: kernel.StatusAllowed, ToolError: "HTTP 500"}, "approved by Finance Lead: executed, but the tool failed: HTTP 500"},
		{approval.Resolution{Outcome: "approved", DecidedBy: "CFO", CallStatus: kernel.StatusDenied, Guard: kernel.GuardCapability, Reason: "capability revoked"}, "approved by CFO, but not executed: denied by the capability guard: capability revoked"},
		{approval.Resolution{Outcome: "approved"}, "approved"},
		{approval.Resolution{Outcome: "cancelled", Reason: "order withdrawn"}, "cancelled: order withdrawn"},
		{approval.Resolution{Outcome: "expired"}, "expired"},
	} {
		if got := resolutionText(&c.res); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.res, got, c.want)
		}
	}
}

func TestRespondResultCodes(t *testing.T) {
	for _, c := range []struct {
		res  kernel.RespondResult
		line string
		code int
	}{
		{kernel.RespondResult{Outcome: "approved", ReceiptID: "rc-1", Call: &kernel.Outcome{Status: kernel.StatusAllowed}}, "approved ar-1: executed (receipt rc-1)", ExitOK},
		{kernel.RespondResult{Outcome: "approved", Call: &kernel.Outcome{Status: kernel.StatusAllowed, ToolError: "boom"}}, "approved ar-1: executed, but the tool failed: boom", ExitToolFailed},
		{kernel.RespondResult{Outcome: "approved", Call: &kernel.Outcome{Status: kernel.StatusDenied, Guard: "forbidden_paths", Reason: "policy changed"}}, "approved ar-1: not executed: denied by the forbidden_paths guard: policy changed", ExitDenied},
		{kernel.RespondResult{Outcome: "approved", Call: &kernel.Outcome{Status: kernel.StatusCancelled, Reason: "withdrawn"}}, "approved ar-1: not executed: cancelled: withdrawn", ExitDenied},
		{kernel.RespondResult{Outcome: "denied", ReceiptID: "rc-2"}, "denied ar-1: the call will not run (receipt rc-2)", ExitOK},
		{kernel.RespondResult{Outcome: "pending", Approvals: 1, Quorum: 3}, "vote recorded for ar-1: 1 of 3 approvals; the call runs once 3 have approved", ExitPending},
		{kernel.RespondResult{Outcome: "odd"}, `ar-1: unexpected outcome "odd"`, ExitError},
	} {
		line, code := respondResult("ar-1", &c.res)
		if line != c.line || code != c.code {
			t.Errorf("%+v:\n got %q %d\nwant %q %d", c.res, line, code, c.line, c.code)
		}
	}
}

// An allowed call without a result was said to have "failed" whatever
// became of it: "executed, but the tool failed: outcome unknown: …" for a
// call that may have run (at_most_once after a crash) and "… not
// delivered: …" for one the tool never received. A script or a person
// reading "the tool failed" may send it again under a new id.
func TestAllowedWithoutAResultSaysWhatBecameOfIt(t *testing.T) {
	for _, c := range []struct {
		call kernel.Outcome
		want string
	}{
		{kernel.Outcome{Status: kernel.StatusAllowed, Execution: kernel.ExecutionToolError, ToolError: "HTTP 500"}, "approved ar-1: executed, but the tool failed: HTTP 500"},
		{kernel.Outcome{Status: kernel.StatusAllowed, Execution: kernel.ExecutionUnknown, ToolError: "outcome unknown: connection reset"},
			"approved ar-1: its outcome is unknown: the tool may have run it (do not send it again under a new request id): connection reset"},
		{kernel.Outcome{Status: kernel.StatusAllowed, Execution: kernel.ExecutionNotDelivered, ToolError: "not delivered: connection refused"},
			"approved ar-1: not delivered: the tool never received it: connection refused"},
	} {
		line, code := respondResult("ar-1", &kernel.RespondResult{Outcome: "approved", Call: &c.call})
		if line != c.want || code != ExitToolFailed {
			t.Errorf("%+v:\n got %q %d\nwant %q %d", c.call, line, code, c.want, ExitToolFailed)
		}
	}
	for _, c := range []struct {
		toolError, want string
	}{
		{"outcome unknown: connection reset", "approved by CFO: its outcome is unknown: the tool may have run it (do not send it again under a new request id): connection reset"},
		{"not delivered: connection refused", "approved by CFO: not delivered: the tool never received it: connection refused"},
	} {
		res := approval.Resolution{Outcome: "approved", DecidedBy: "CFO", CallStatus: kernel.StatusAllowed, ToolError: c.toolError}
		if got := resolutionText(&res); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.toolError, got, c.want)
		}
	}
}
