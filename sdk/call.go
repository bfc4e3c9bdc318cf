package chio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/canon"
	"github.com/chiokernel/chio/internal/connect"
	"github.com/chiokernel/chio/kernel"
)

// Intent is a governed intent: the call's declared purpose and monetary
// envelope. Grants with require_approval_above need one.
type Intent = kernel.GovernedIntent

// Amount is money in minor units, as in an Intent's MaxAmount.
type Amount = kernel.Amount

// Call is one tool call.
type Call struct {
	Server    string
	Tool      string
	Operation string // default "invoke"
	// Arguments is a JSON object: a json.RawMessage or []byte is sent as
	// is, anything else is encoded with encoding/json; nil sends {}.
	Arguments any
	Intent    *Intent
	// RequestID makes the call idempotent across processes: the same id
	// with the same content returns the first call's outcome (an agent that
	// restarts can replay its steps). Default: "req-" + a UUIDv7. It must
	// not start with "ar-", which names approval requests.
	RequestID string
}

// Result is what a call came to: *Allowed, *PendingApproval or *Denied.
type Result interface{ isResult() }

// Allowed: the call was allowed and sent to its tool. Check ToolError:
// set when the tool failed, was never reached, or its outcome is unknown
// (Execution says which); Output is meaningful only when ToolError is "".
type Allowed struct {
	RequestID string
	ReceiptID string
	Output    json.RawMessage
	ToolError string
	// Execution: "succeeded"; "tool_error" (the tool ran and failed);
	// "not_delivered" (the tool never saw it); "unknown" (it MAY HAVE RUN:
	// retry with the same RequestID or Await it, never under a new id).
	// "" if chiod did not say.
	Execution string
	// ApprovalID: the approval a human granted, when the call waited for one.
	ApprovalID string
	// Amended: the human approved an edited call. The tool ran with
	// AmendedArguments, not with the call's Arguments, and Output is
	// theirs (as the Python and TypeScript SDKs' approval.amended and
	// approval.amended_arguments).
	Amended          bool
	AmendedArguments json.RawMessage
}

// Failed reports whether the tool did not succeed: a ToolError, or an
// Execution other than "succeeded" (as the Python and TypeScript SDKs'
// failed). An execution this SDK does not know (a newer chiod's) counts as
// failed, even without a ToolError: never a success whose Output is used.
// Check Execution before sending it again: "unknown" may have run.
func (a *Allowed) Failed() bool {
	return a.ToolError != "" || a.Execution != "" && a.Execution != kernel.ExecutionSucceeded
}

// PendingApproval: the call has not ended yet. Usually it is parked until a
// human decides; keep RequestID (or ApprovalID) and pass it to
// [Client.Await], from this process or another. Await(RequestID) works in
// every case, including Running without an ApprovalID.
//
// [Client.Status] also reports a call that was decided and whose tool is
// still running as a PendingApproval with Running set: ApprovalID is then
// "" when no human was ever involved (the call was allowed outright), or
// the approval a human already granted. [Client.CallTool] never returns
// one without an ApprovalID: it waits for such a call's outcome.
type PendingApproval struct {
	RequestID  string
	ApprovalID string    // "" when Running and no human was involved
	Deadline   time.Time // zero if chiod did not say
	Summary    string    // what the approver is shown
	ReceiptID  string    // the "incomplete" receipt
	// Running: decided (allowed, or approved) and the tool is running; no
	// human decision is awaited. Await(RequestID) returns its outcome.
	Running bool
}

// Denied: a guard, a human or a deadline said no (Status StatusDenied), or
// the call was withdrawn before a human decided (StatusCancelled).
type Denied struct {
	Status    string // StatusDenied or StatusCancelled
	RequestID string
	ReceiptID string
	Reason    string
	Guard     string // e.g. "forbidden_paths", "human-approval", "approval-timeout"
	// ApprovalID: the approval the call waited for, when it waited for one.
	ApprovalID string
	// Amended: a human approved an edited call and a guard then denied
	// it: the arguments denied were AmendedArguments, not the call's
	// Arguments (as the Python and TypeScript SDKs' approval.amended and
	// approval.amended_arguments).
	Amended          bool
	AmendedArguments json.RawMessage
}

func (*Allowed) isResult()         {}
func (*PendingApproval) isResult() {}
func (*Denied) isResult()          {}

// Call statuses (Resolution.Status).
const (
	StatusAllowed   = kernel.StatusAllowed
	StatusDenied    = kernel.StatusDenied
	StatusCancelled = kernel.StatusCancelled
)

// Retry policy for POST /v1/calls. A retry re-sends the same request id,
// so it can never run a tool twice; it is still bounded, because a chiod
// that keeps failing should surface as an error, not a hang.
const (
	callAttempts     = 4
	callFirstBackoff = 250 * time.Millisecond
	// proofRefresh: a proof older than this is re-signed before a retry
	// (chiod refuses proofs more than 60 s old); the id and content, which
	// are what the kernel deduplicates on, stay the same.
	proofRefresh = 30 * time.Second
)

// CallTool submits call and returns its typed result. A denial is a
// *Denied, not an error; errors are bad input ([ErrBadRequest]), refused
// credentials ([ErrUnauthorized]), a request id reused for other content
// ([ErrConflict]), chiod unable to decide on every attempt
// ([ErrUnavailable]: nothing was allowed), chiod that could not be
// connected to at all ([ErrNotSent], a [*NotSentError]: not running, or a
// wrong URL; the call did not run — also when ctx ends the call before any
// attempt got a connection), and lost answers that outlast
// the retries or the context, or an allowed call still running when the
// context ends ([ErrOutcomeUnknown], an
// [*OutcomeUnknownError]: the call may have run; retry it with the same
// RequestID or Await it, never under a new id).
func (c *Client) CallTool(ctx context.Context, call Call) (Result, error) {
	tc, err := c.buildCall(call)
	if err != nil {
		return nil, err
	}
	var (
		out      callState
		body     []byte
		signedAt time.Time
	)
	backoff := callFirstBackoff
	lost := false // some attempt may have reached chiod without its answer reaching us
	for attempt := 1; ; attempt++ {
		if body == nil || time.Since(signedAt) > proofRefresh {
			signedAt = time.Now()
			if body, err = c.signCall(tc, signedAt); err != nil {
				return nil, err
			}
		}
		out = callState{}
		// A request's bytes are written only once it has a connection
		// (after the TLS handshake, for https): until then, nothing of this
		// attempt was sent.
		connected := false
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected = true }}
		err = c.postCall(httptrace.WithClientTrace(ctx, trace), tc.RequestID, body, &out)
		if err == nil {
			break
		}
		// An attempt that never got a connection wrote nothing: the dial
		// failed, or ctx ended while it was dialing (net/http then returns
		// ctx's error, not a dial error).
		var te *errTransport
		if !connected && errors.As(err, &te) && (neverSent(te.err) || ctx.Err() != nil) {
			err = &errNotSent{te.err}
		}
		lost = lost || errors.Is(err, ErrOutcomeUnknown)
		if ctx.Err() != nil {
			// The attempt in flight may have reached chiod if it had a
			// connection (then its error is a lost answer).
			return nil, c.endedByContext(ctx, tc.RequestID, lost)
		}
		if !retryable(err) || attempt == callAttempts {
			if lost {
				return nil, &OutcomeUnknownError{RequestID: tc.RequestID, Err: err}
			}
			var ns *errNotSent
			if errors.As(err, &ns) {
				return nil, &NotSentError{RequestID: tc.RequestID, Err: ns.err}
			}
			return nil, fmt.Errorf("chio: call %s: %w", tc.RequestID, err)
		}
		d, ok := retryWait(ctx, err, backoff)
		if !ok {
			// chiod said when to ask again, and the deadline comes first.
			if lost {
				return nil, &OutcomeUnknownError{RequestID: tc.RequestID, Err: err}
			}
			return nil, fmt.Errorf("chio: call %s: %w", tc.RequestID, err)
		}
		if sleepCtx(ctx, d) != nil {
			return nil, c.endedByContext(ctx, tc.RequestID, lost)
		}
		backoff *= 2
	}
	if out.Status == kernel.StatusDispatching && out.ApprovalRequestID == "" {
		// Allowed and in flight (a retry while chiod finishes the call it
		// already decided): wait for its outcome rather than report a
		// human wait that is not happening.
		r, err := c.Await(ctx, tc.RequestID)
		if err != nil {
			// Whatever ended the wait (the caller's deadline included),
			// the call was allowed and is running: it may have run. Not
			// ErrTimedOut, which says no decision was made.
			if ctx.Err() != nil {
				err = ctx.Err()
			} else if errors.Is(err, ErrTimedOut) {
				// Await stopped at the caller's deadline an instant
				// before ctx reported it (no time left for a poll).
				err = context.DeadlineExceeded
			}
			return nil, &OutcomeUnknownError{RequestID: tc.RequestID, Err: err}
		}
		return r.result(), nil
	}
	res, err := out.result()
	if err != nil {
		// An answer naming no status chiod sends: the call may have been
		// decided and run. Never a plain error read as "it failed".
		return nil, &OutcomeUnknownError{RequestID: tc.RequestID, Err: err}
	}
	if p, ok := res.(*PendingApproval); ok && p.Deadline.IsZero() {
		// A replayed outcome (an idempotent retry) does not carry the
		// deadline: read it from the request. Best effort; the id is what
		// matters and the caller already has it.
		if req, err := c.Approval(ctx, p.ApprovalID); err == nil {
			p.Deadline, p.Summary = time.Unix(req.ExpiresAt, 0), req.Summary
		}
	}
	return res, err
}

// postCall sends one attempt. 403 is a denial when the body is an
// outcome, and an error when it is chiod's error envelope.
func (c *Client) postCall(ctx context.Context, requestID string, body []byte, out *callState) error {
	// Idempotency-Key also lets net/http itself resend the request over a
	// fresh connection when a reused one was already dead.
	hdr := http.Header{"Idempotency-Key": {requestID}}
	status, err := c.send(ctx, http.MethodPost, "/v1/calls", body, hdr, out, http.StatusOK, http.StatusAccepted, http.StatusForbidden)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status >= 200 && ae.Status < 300 {
		// A success chiod never answers a call with (201, 204, …: a
		// proxy's, a newer server's): the request went through and the
		// call may have run. An unreadable answer, never "it failed" or
		// "it was not sent", whatever its body says.
		err = &errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): a status chiod never answers a call with", ae.Status)}
	}
	var bad *errBadAnswer
	if errors.As(err, &bad) {
		// chiod (or a proxy after it) answered, and the answer cannot be
		// read: the call may have been decided and run. Not retried (the
		// same answer would come back), reported as ErrOutcomeUnknown.
		return &errCallAnswerUnreadable{bad}
	}
	if err == nil && out.Error != nil && *out.Error == "" {
		// An envelope that claims an error and names none is neither an
		// error nor an outcome: unreadable, and the call may have run (as
		// the Python and TypeScript SDKs; testdata/sdk/call_outcomes.json).
		return &errCallAnswerUnreadable{&errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): an error envelope naming no error", status)}}
	}
	if err == nil && out.Error != nil {
		return &APIError{Status: status, Code: *out.Error, Message: out.Message}
	}
	if err == nil {
		if err := out.names(requestID, status); err != nil {
			// Another call's answer (a proxy or cache that served it):
			// ours may have run, and this says nothing of it.
			return &errCallAnswerUnreadable{err}
		}
		if callHTTPStatus(out.Status) != status {
			// Not chiod's answer (a 200 saying "denied", a 403 saying
			// "allowed": a proxy rewrote the status): neither a decision
			// nor a success, so the call may have run (as chio call, and
			// the Python and TypeScript SDKs; call_outcomes.json).
			return &errCallAnswerUnreadable{&errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): call status %.40q, which chiod answers with another HTTP status", status, out.Status)}}
		}
		if out.Status == kernel.StatusPendingApproval && out.ApprovalRequestID == "" {
			// chiod parks a call under an approval id: a pending answer
			// without one is not chiod's (as chio call reads it).
			return &errCallAnswerUnreadable{&errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): a pending answer without an approval id", status)}}
		}
	}
	return err
}

// callHTTPStatus is the HTTP status chiod answers a call outcome with: 200
// allowed, 202 pending or dispatching, 403 denied or cancelled; 0 for a
// status chiod never sends.
func callHTTPStatus(status string) int {
	switch status {
	case StatusAllowed:
		return http.StatusOK
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		return http.StatusAccepted
	case StatusDenied, StatusCancelled:
		return http.StatusForbidden
	}
	return 0
}

// errCallAnswerUnreadable is an answer to POST /v1/calls that cannot be
// read (errBadAnswer): the call may have run ([ErrOutcomeUnknown]).
type errCallAnswerUnreadable struct{ err error }

func (e *errCallAnswerUnreadable) Error() string        { return e.err.Error() }
func (e *errCallAnswerUnreadable) Unwrap() error        { return e.err }
func (e *errCallAnswerUnreadable) Is(target error) bool { return target == ErrOutcomeUnknown }

// endedByContext is CallTool's error when ctx ended the call between or
// during attempts: outcome unknown if any attempt may have reached chiod
// without its answer reaching us (lost), else not sent — every attempt
// failed before a byte of it was written, or was turned away by chiod
// (503, 429). Either way it wraps ctx's error (errors.Is(err,
// context.DeadlineExceeded)).
func (c *Client) endedByContext(ctx context.Context, requestID string, lost bool) error {
	if lost {
		return &OutcomeUnknownError{RequestID: requestID, Err: ctx.Err()}
	}
	return &NotSentError{RequestID: requestID, Err: ctx.Err()}
}

// errNotSent is an attempt that could not connect to chiod: nothing of it
// was sent, so it did not run. It is retried, and is not ErrOutcomeUnknown
// (it holds the connection error, not the errTransport that would say so).
type errNotSent struct{ err error }

func (e *errNotSent) Error() string { return "chio: cannot connect to chiod: " + e.err.Error() }

// neverSent reports a failed attempt that certainly did not reach chiod: the
// connection could not be made (refused, no route, a name that does not
// resolve, a connection not ready within the connect timeout).
// CallTool asks it only of an attempt that never got a connection
// (httptrace's GotConn): net/http re-sends an Idempotency-Key request over a
// fresh connection when a reused one failed after the write, and that
// fresh dial failing does not undo the write. A TLS handshake that failed
// (rather than ran out of time), a reset or a timeout after connecting is
// never one.
func neverSent(err error) bool { return connect.NeverMade(err) }

// buildCall checks and normalizes the caller's input.
func (c *Client) buildCall(call Call) (*kernel.ToolCall, error) {
	if c.key == nil || c.capRaw == nil {
		return nil, fmt.Errorf("%w: calling a tool needs the agent key and capability (WithKey, WithCapability or FromEnv)", ErrBadRequest)
	}
	if call.Server == "" || call.Tool == "" {
		return nil, fmt.Errorf("%w: server and tool are required", ErrBadRequest)
	}
	if call.RequestID == "" {
		call.RequestID = kernel.NewID("req-")
	} else if strings.HasPrefix(call.RequestID, "ar-") {
		return nil, fmt.Errorf("%w: request id %q: the ar- prefix names approval requests", ErrBadRequest, call.RequestID)
	} else if !approval.ValidID(call.RequestID) {
		// chiod's rule, checked before anything is sent: an id it would
		// refuse (a newline cannot even go in the Idempotency-Key header,
		// which failed as "outcome unknown, it may have run") is a bad
		// request, as in the TypeScript and Python SDKs.
		return nil, fmt.Errorf("%w: request id %q must be %s, not starting with ar- (approval ids)", ErrBadRequest, call.RequestID, approval.IDRule)
	}
	if call.Operation == "" {
		call.Operation = "invoke"
	}
	args, err := rawJSON(call.Arguments)
	if err != nil {
		return nil, fmt.Errorf("%w: arguments: %v", ErrBadRequest, err)
	}
	if args == nil {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' {
		return nil, fmt.Errorf("%w: arguments must be a JSON object", ErrBadRequest)
	}
	var intent json.RawMessage
	if call.Intent != nil {
		if intent, err = rawJSON(call.Intent); err != nil {
			return nil, fmt.Errorf("%w: intent: %v", ErrBadRequest, err)
		}
	}
	return &kernel.ToolCall{RequestID: call.RequestID, Capability: c.capRaw, Server: call.Server, Tool: call.Tool,
		Operation: call.Operation, Arguments: args, GovernedIntent: intent}, nil
}

// signCall signs the proof at time at and encodes the body.
func (c *Client) signCall(tc *kernel.ToolCall, at time.Time) ([]byte, error) {
	ph, err := kernel.ParameterHash(tc.Server, tc.Tool, tc.Arguments, tc.GovernedIntent)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if tc.Proof, err = kernel.SignProof(*c.key, tc.RequestID, c.capID, tc.Server, tc.Tool, ph, at); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	return encodeJSON(tc)
}

// rawJSON encodes v (raw bytes pass through) and checks it is strict JSON
// that chiod will hash the same way: no duplicate keys, no integers beyond
// ±2^53. nil stays nil.
func rawJSON(v any) (json.RawMessage, error) {
	var raw []byte
	switch a := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	default:
		b, err := encodeJSON(v)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	raw = bytes.TrimSpace(raw)
	if err := canon.Check(raw); err != nil {
		return nil, err
	}
	return json.RawMessage(raw), nil
}

// encodeJSON is json.Marshal without HTML escaping: what is sent should
// read as the caller wrote it (chiod hashes the canonical form either way).
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// retryable: the request never got an answer, or chiod answered that it
// could not decide. Anything else will not change by asking again.
func retryable(err error) bool {
	var te *errTransport
	var ns *errNotSent
	var ae *APIError
	return errors.As(err, &te) || errors.As(err, &ns) || errors.As(err, &ae) && ae.retryable()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
