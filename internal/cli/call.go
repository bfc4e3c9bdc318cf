package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("call SERVER TOOL", "call a tool with --args JSON: exit 0 allowed, 3 pending, 4 denied, 5 still executing (a retry), 6 no result (tool failed, not delivered or outcome unknown)", runCall)
}

func runCall(e *Env, args []string) int {
	// Caught from the start, so that a signal at any point is reported
	// with what it leaves behind (interrupt.go) rather than killing the
	// process with a request id never printed.
	ctx, stopSignals := onInterrupt()
	defer stopSignals()
	fs := newFlags(e, "call")
	r := addRemote(fs, e)
	argsJSON := fs.String("args", "{}", "tool arguments (JSON object)")
	intent := fs.String("intent", "", "governed intent (JSON object)")
	capFile := fs.String("capability", "", "capability file (env CHIO_CAPABILITY)")
	keyFile := fs.String("key", "", "agent private key (env CHIO_KEY)")
	op := fs.String("operation", "invoke", "operation")
	reqID := fs.String("request-id", "", "request id (default: generated); reuse it to retry idempotently")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("call", pos, 2); err != nil {
		return fail(e, err)
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	sc, err := buildCall(e, pos[0], pos[1], *op, *argsJSON, *intent, envOr(e, *capFile, "CHIO_CAPABILITY"), envOr(e, *keyFile, "CHIO_KEY"), *reqID)
	if err != nil {
		return fail(e, err)
	}
	call := sc.call
	// An agent's call never carries the operator's token (CHIO_ADMIN_TOKEN
	// or CHIO_READ_TOKEN): its key and capability are its credentials, and
	// it reads its own call back with a Chio-Proof signed by that key.
	r.agent = true
	out, lost, err := postCall(ctx, e, r, sc)
	if in, ok := err.(interrupted); ok {
		where := callUnsent
		if sc.sent.Load() {
			where = callInFlight
		}
		return interruptedCall(e, in, sc, where, *reqID != "")
	}
	if err != nil {
		if lost {
			// Some attempt may have run the call: name it and how to
			// learn its outcome, whatever the last attempt met.
			return lostAnswer(e, call, err)
		}
		if turnedAway(err) {
			// chiod (or a gateway before it) turned every attempt away:
			// nothing was allowed. Asking again later under the same id
			// is safe.
			fail(e, err)
			fmt.Fprintf(e.Stderr, "chio: the call did not run: chiod turned it away; try again later (with --request-id %s, or a new id)\n", shown(call.RequestID))
			return ExitError
		}
		if neverSent(err) {
			// Every attempt failed to connect: chiod never saw the call.
			fail(e, err)
			fmt.Fprintf(e.Stderr, "chio: the call was not sent: is chiod running at %s? (set CHIO_URL or --url)\n", shown(r.base()))
			return ExitError
		}
		return fail(e, err)
	}
	if out.Status == kernel.StatusDispatching && out.ApprovalRequestID == "" {
		// A retry (--request-id) met its call allowed and still executing:
		// no human is involved, so wait for it to settle and report it as
		// a fresh call would, never as "pending approval".
		a := &awaiter{ctx: ctx, r: r, key: &sc.key}
		st, err := a.settle(call.RequestID, time.Now().Add(callSettleWait))
		if in, ok := err.(interrupted); ok {
			return interruptedCall(e, in, sc, callExecuting, *reqID != "")
		}
		if err != nil && !errors.Is(err, errTimedOut) {
			// The call was allowed: it may have run. Name its id.
			return lostAnswer(e, call, err)
		}
		if err != nil {
			return a.stop(e, call.RequestID, callSettleWait, st, err)
		}
		out = *st
	}
	if err := knownOutcome(call.RequestID, &out.Outcome); err != nil {
		// Not an answer chiod sends: it says nothing of the call, which
		// may have run. Name the id, as for a lost answer.
		return lostAnswer(e, call, err)
	}
	return printOutcome(e, r, &out)
}

// knownOutcome checks that out is an answer chiod sends for requestID: a
// status this CLI knows (outcomeCode) about this call, naming it. Anything else reads
// as a lost answer, never as success, a decision or "not run".
func knownOutcome(requestID string, out *kernel.Outcome) error {
	if outcomeCode(out) == ExitError {
		return fmt.Errorf("%w: unexpected call status %q", errBadResponse, out.Status)
	}
	if out.Status == kernel.StatusPendingApproval && out.ApprovalRequestID == "" {
		// chiod parks a call under an approval id: without one, exit 3
		// would hand the script nothing to await, and no request id.
		return fmt.Errorf("%w: a pending answer without an approval id", errBadResponse)
	}
	// chiod's answer always names its call: one naming no call, or
	// another, says nothing of this one (as the SDKs read it).
	if out.RequestID != requestID {
		return fmt.Errorf("%w: an answer for request %q", errBadResponse, out.RequestID)
	}
	return nil
}

// callSettleWait bounds how long chio call waits for a call it found
// already executing; after it, exit 5 and `chio await REQUEST_ID` goes on.
const callSettleWait = 5 * time.Minute

// signedCall is a call with what signs its proof, so that a retry can
// re-sign a proof grown old while keeping the id and content.
type signedCall struct {
	call      *kernel.ToolCall
	key       keys.PrivateKey
	capID     string
	paramHash string
	signedAt  time.Time
	// sent: some attempt got a connection to chiod, so its request may
	// have been written (postCall); false, not one byte of it was.
	sent atomic.Bool
}

// sign (re)signs the call's proof at time at.
func (sc *signedCall) sign(at time.Time) error {
	c := sc.call
	proof, err := kernel.SignProof(sc.key, c.RequestID, sc.capID, c.Server, c.Tool, sc.paramHash, at)
	if err != nil {
		return err
	}
	c.Proof, sc.signedAt = proof, at
	return nil
}

// buildCall reads the capability and key and signs the call proof.
func buildCall(e *Env, server, tool, op, args, intent, capFile, keyFile, reqID string) (*signedCall, error) {
	if capFile == "" || keyFile == "" {
		return nil, usageErr("call", "--capability and --key (or CHIO_CAPABILITY and CHIO_KEY) are required")
	}
	capRaw, err := readCapabilityFile(capFile)
	if err != nil {
		return nil, err
	}
	var capHead struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(capRaw, &capHead); err != nil || capHead.ID == "" {
		return nil, fmt.Errorf("%s is not a capability file", capFile)
	}
	key, err := e.loadKey(keyFile)
	if err != nil {
		return nil, err
	}
	if err := canon.Check([]byte(args)); err != nil {
		return nil, usageError("--args: " + err.Error())
	}
	var intentRaw json.RawMessage
	if intent != "" {
		if err := canon.Check([]byte(intent)); err != nil {
			return nil, usageError("--intent: " + err.Error())
		}
		intentRaw = json.RawMessage(intent)
	}
	if reqID == "" {
		reqID = kernel.NewID("req-")
	}
	ph, err := kernel.ParameterHash(server, tool, json.RawMessage(args), intentRaw)
	if err != nil {
		return nil, err
	}
	sc := &signedCall{key: key, capID: capHead.ID, paramHash: ph,
		call: &kernel.ToolCall{RequestID: reqID, Capability: json.RawMessage(trimNL(capRaw)), Server: server, Tool: tool,
			Operation: op, Arguments: json.RawMessage(args), GovernedIntent: intentRaw}}
	if err := sc.sign(time.Now()); err != nil {
		return nil, err
	}
	return sc, nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// printOutcome prints a call outcome and maps it to the exit code: 0
// allowed, 3 pending (or approved and still executing), 4 denied or
// cancelled, 6 allowed without a result (noResult), 1 any other status. The
// approval chiod adds to a retry of a call a human decided is printed as
// chio await prints it: an amendment must never go unsaid.
func printOutcome(e *Env, r *remote, out *httpapi.CallStatus) int {
	if r.output != "table" {
		printJSON(e.Stdout, out, r.output == "jsonl")
	} else {
		// Text from the tool, the agent or an approver is escaped
		// (approval_text.go); the tool's output stays JSON equal in
		// value (shown_output.go).
		switch out.Status {
		case kernel.StatusAllowed:
			if withoutResult(&out.Outcome) {
				fmt.Fprintf(e.Stderr, "allowed, but %s\n", shown(noResult(out.Execution, out.ToolError, "the tool failed: ")))
			}
			fmt.Fprintln(e.Stdout, shownOutput(out.Output))
		case kernel.StatusPendingApproval:
			// The id is chiod's word too: escaped like the rest (a valid
			// id, approval.ValidID, is unchanged).
			fmt.Fprintln(e.Stdout, shown(out.ApprovalRequestID))
			fmt.Fprintf(e.Stderr, "pending approval: %s (deadline %s); wait with: chio await %s\n",
				shown(out.Summary), time.Unix(out.Deadline, 0).UTC().Format(time.RFC3339), shown(out.ApprovalRequestID))
		case kernel.StatusDispatching:
			// Approved and executing: await it by its approval id.
			fmt.Fprintln(e.Stdout, shown(out.ApprovalRequestID))
			fmt.Fprintf(e.Stderr, "approved, still executing; wait with: chio await %s\n", shown(out.ApprovalRequestID))
		case kernel.StatusCancelled:
			fmt.Fprintf(e.Stdout, "cancelled: %s\n", shown(out.Reason))
		case kernel.StatusDenied:
			fmt.Fprintf(e.Stdout, "denied by %s: %s\n", shown(out.Guard), shown(out.Reason))
		}
		printApproval(e, out.Approval)
	}
	code := outcomeCode(&out.Outcome)
	if code == ExitError {
		fmt.Fprintf(e.Stderr, "chio: unexpected call status %q from chiod (request %s)\n", out.Status, shown(out.RequestID))
	}
	return code
}

// outcomeCode is a call outcome's exit code (chio call, chio await).
func outcomeCode(out *kernel.Outcome) int {
	switch out.Status {
	case kernel.StatusAllowed:
		if withoutResult(out) {
			return ExitToolFailed
		}
		return ExitOK
	case kernel.StatusPendingApproval:
		return ExitPending
	case kernel.StatusDispatching:
		// Approved and executing: `chio await ID` waits for it. Without
		// an approval id there is nothing a script could await here.
		if out.ApprovalRequestID != "" {
			return ExitPending
		}
	case kernel.StatusDenied, kernel.StatusCancelled:
		return ExitDenied
	}
	// Anything else is not an answer this CLI knows: fail closed, neither
	// success nor a decision.
	return ExitError
}
