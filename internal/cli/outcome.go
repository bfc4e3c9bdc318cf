package cli

import (
	"fmt"
	"strings"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// deniedBy says who or what stopped a call in words: a guard is not a
// person ("the capability guard"), a human is named.
func deniedBy(guard, who string) string {
	switch guard {
	case kernel.GuardHumanApproval:
		if who != "" {
			return who
		}
		return "an approver"
	case kernel.GuardApprovalTimeout:
		return "the approval deadline"
	case "":
		return "the kernel"
	}
	return "the " + guard + " guard"
}

// callResult is what became of a call, in words, and the exit code that
// says the same to a script: 0 executed, 4 did not run, 6 no result (noResult).
func callResult(c *kernel.Outcome, who string) (string, int) {
	switch c.Status {
	case kernel.StatusAllowed:
		if withoutResult(c) {
			return noResult(c.Execution, c.ToolError, "executed, but the tool failed: "), ExitToolFailed
		}
		return "executed", ExitOK
	case kernel.StatusDenied:
		return fmt.Sprintf("not executed: denied by %s: %s", deniedBy(c.Guard, who), c.Reason), ExitDenied
	case kernel.StatusCancelled:
		return "not executed: cancelled: " + c.Reason, ExitDenied
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		return "still " + c.Status, ExitPending
	}
	return "unknown call status " + c.Status, ExitError
}

// respondResult describes the answer to a vote (`chio approval approve`,
// `deny`, the terminal watcher) and maps it to an exit code. An approval
// exits non-zero unless the call then ran: 3 while more votes are needed,
// 4 when the call did not run after all (a guard re-run at resume, e.g. the
// capability was revoked during the wait), 6 when it has no result (noResult).
func respondResult(id string, res *kernel.RespondResult) (string, int) {
	receipt := ""
	if res.ReceiptID != "" {
		receipt = " (receipt " + res.ReceiptID + ")"
	}
	switch res.Outcome {
	case approval.StatusApproved:
		if res.Call == nil {
			return "approved " + id + receipt, ExitOK
		}
		what, code := callResult(res.Call, "")
		return "approved " + id + ": " + what + receipt, code
	case approval.StatusDenied:
		return "denied " + id + ": the call will not run" + receipt, ExitOK
	case approval.StatusPending:
		return fmt.Sprintf("vote recorded for %s: %d of %d approvals; the call runs once %d have approved",
			id, res.Approvals, res.Quorum, res.Quorum), ExitPending
	}
	return fmt.Sprintf("%s: unexpected outcome %q", id, res.Outcome), ExitError
}

// resolutionText says how a request ended and what became of its call:
// "approved by CFO: executed", "approved by Finance Lead, but not executed:
// denied by the capability guard: capability revoked", "denied by CFO:
// duplicate refund", "expired: …".
func resolutionText(res *approval.Resolution) string {
	who := res.DecidedBy
	var s string
	switch res.Outcome {
	case approval.StatusApproved:
		s = "approved"
		if who != "" {
			s += " by " + who
		}
		switch {
		case res.CallStatus == kernel.StatusAllowed && res.ToolError != "":
			s += ": " + noResult("", res.ToolError, "executed, but the tool failed: ")
		case res.CallStatus == kernel.StatusAllowed:
			s += ": executed"
		case res.CallStatus == kernel.StatusDenied:
			s += ", but not executed: denied by " + deniedBy(res.Guard, "") + ": " + res.Reason
		case res.CallStatus == kernel.StatusCancelled:
			s += ", but not executed: cancelled: " + res.Reason
		}
		return s
	case approval.StatusDenied:
		switch {
		case res.Guard == "" && who == "":
			s = "denied"
		case res.Guard == "":
			s = "denied by " + who
		default:
			s = "denied by " + deniedBy(res.Guard, who)
		}
	default:
		s = res.Outcome
	}
	if res.Reason != "" {
		s += ": " + res.Reason
	}
	return s
}

// triggerText says in words why a request asks a person; unknown triggers
// (a check routed to a human by on_trigger) are named.
func triggerText(req *approval.Request) string {
	var out []string
	for _, t := range req.TriggeredBy {
		switch t {
		case kernel.GuardApprovalAbove:
			out = append(out, "the amount is at or above the approval threshold")
		case kernel.GuardApprovalAlways:
			out = append(out, "every call under this grant needs approval")
		case kernel.GuardApprovalFirstN:
			out = append(out, "one of the agent's first calls under this grant")
		case kernel.GuardApprovalActions:
			out = append(out, "this kind of action needs approval")
		case "hitl":
			if req.Kind == approval.KindConfirm {
				out = append(out, "the agent asks you to confirm")
			} else {
				out = append(out, "the agent asks you")
			}
		default:
			out = append(out, "the "+t+" check asks for a person instead of denying")
		}
	}
	return strings.Join(out, "; ")
}

// noResult says what became of an allowed call that has no result (exit
// 6), by its execution or, where none is carried (an approval's
// resolution), the kernel's prefix of its tool_error: the tool failed
// (failed: then this text), the call never reached it, or nobody knows
// whether it ran. "the tool failed" for all three told a script or a
// person that a call which may have run had failed, and invited sending
// it again under a new request id.
func noResult(execution, toolError, failed string) string {
	switch {
	case execution == kernel.ExecutionUnknown || execution == "" && strings.HasPrefix(toolError, kernel.ToolErrorUnknown):
		return "its outcome is unknown: the tool may have run it (do not send it again under a new request id): " +
			strings.TrimPrefix(toolError, kernel.ToolErrorUnknown)
	case execution == kernel.ExecutionNotDelivered || execution == "" && strings.HasPrefix(toolError, kernel.ToolErrorNotDelivered):
		return "not delivered: the tool never received it: " + strings.TrimPrefix(toolError, kernel.ToolErrorNotDelivered)
	}
	return failed + toolError
}

// withoutResult reports whether an allowed call has no result (exit 6): a
// tool_error, or an execution other than "succeeded" — one this CLI does
// not know included — as the SDKs' failed (Go Allowed.Failed) reads it.
// Never a success whose output is used.
func withoutResult(out *kernel.Outcome) bool {
	return out.ToolError != "" || out.Execution != "" && out.Execution != kernel.ExecutionSucceeded
}
