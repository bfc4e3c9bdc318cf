package cli

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// `chio approval approve` (and the terminal watcher) read the call an
// approval resumed as chio call and chio await read it (withoutResult): an
// allowed call whose execution is not "succeeded" has no result, exit 6,
// tool_error or not. It printed "executed" and exited 0 for one carrying
// no tool_error, telling the approver a call that may never have run (or
// may have run twice for all anyone knows) had.
func TestApprovalOfACallWithoutResultIsNotExecuted(t *testing.T) {
	for _, execution := range []string{kernel.ExecutionUnknown, kernel.ExecutionNotDelivered, kernel.ExecutionToolError, "some_new_state"} {
		res := &kernel.RespondResult{Outcome: approval.StatusApproved,
			Call: &kernel.Outcome{RequestID: "req-1", Status: kernel.StatusAllowed, Execution: execution}}
		text, code := respondResult("ar-1", res)
		if code != ExitToolFailed || text == "approved ar-1: executed" {
			t.Errorf("execution %q: %q, exit %d; want exit %d, not \"executed\"", execution, text, code, ExitToolFailed)
		}
	}
	// A call that succeeded still reads as executed.
	res := &kernel.RespondResult{Outcome: approval.StatusApproved,
		Call: &kernel.Outcome{RequestID: "req-1", Status: kernel.StatusAllowed, Execution: kernel.ExecutionSucceeded}}
	if text, code := respondResult("ar-1", res); code != ExitOK || !strings.Contains(text, "executed") {
		t.Fatalf("succeeded: %q, exit %d", text, code)
	}
}
