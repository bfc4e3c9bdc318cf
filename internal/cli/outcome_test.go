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
