package chio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// Long-poll and reconnect pacing for Await.
const (
	// longPoll is one GET /v1/calls/{id}?wait= (chiod caps it at 60 s).
	longPoll = 30 * time.Second
	// pollMargin bounds how long one request may outlive its wait, so a
	// connection that silently died is noticed and replaced.
	pollMargin     = 15 * time.Second
	reconnectFirst = 250 * time.Millisecond
	reconnectMax   = 5 * time.Second
)

// Resolution is how a call ended after a wait.
type Resolution struct {
	Status     string // StatusAllowed, StatusDenied or StatusCancelled
	RequestID  string
	ApprovalID string // "" when the call never waited for a human
	ReceiptID  string // the final receipt

	Output    json.RawMessage // when allowed
	ToolError string          // allowed, but the tool failed (or was not reached)
	Execution string          // allowed: succeeded | tool_error | not_delivered | unknown
	Reason    string          // when denied or cancelled
	Guard     string          // e.g. "human-approval", "approval-timeout"

	// What the deciding human signed, when one decided.
	Approver         string // ed25519:… key
	ApproverName     string // display name from the policy
	Note             string
	Amended          bool            // the human approved an edited call: the tool got AmendedArguments
	AmendedArguments json.RawMessage // the arguments the human approved
}

// callState is GET /v1/calls/{id}'s (and POST /v1/calls') answer.
type callState struct {
	Status            string          `json:"status"`
	RequestID         string          `json:"request_id"`
	ReceiptID         string          `json:"receipt_id"`
	Output            json.RawMessage `json:"output"`
	ToolError         string          `json:"tool_error"`
	Execution         string          `json:"execution"`
	Reason            string          `json:"reason"`
	Guard             string          `json:"guard"`
	ApprovalRequestID string          `json:"approval_request_id"`
	Deadline          int64           `json:"deadline"`
	Summary           string          `json:"summary"`
	Approval          *struct {
		Approver            string          `json:"approver"`
		ApproverDisplayName string          `json:"approver_display_name"`
		Note                string          `json:"note"`
		Amended             bool            `json:"amended"`
		AmendedArguments    json.RawMessage `json:"amended_arguments"`
	} `json:"approval"`
	// An error envelope, when a 403 carries one instead of an outcome;
	// nil when absent (or null), so that an empty one ("") is told apart.
	Error   *string `json:"error"`
	Message string  `json:"message"`
}

// names checks that the state is of the call asked about: chiod's always
// names its call (request_id). One naming another call, or none (a proxy or
// cache that served another request's answer), says nothing about this one
// and must never be read as its outcome (as the Python and TypeScript SDKs).
func (s *callState) names(requestID string, status int) error {
	if s.RequestID != requestID {
		return &errBadAnswer{fmt.Errorf("chio: bad response from chiod (%d): the state (status %.40q) of call %.140q, not of %s",
			status, s.Status, s.RequestID, requestID)}
	}
	return nil
}

func final(status string) bool {
	return status == StatusAllowed || status == StatusDenied || status == StatusCancelled
}

// result maps a state to the typed result. An unknown status is an error:
// failing closed, it is never mistaken for an allow.
func (s *callState) result() (Result, error) {
	switch s.Status {
	case StatusAllowed:
		return s.resolution().result(), nil
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		// Dispatching: allowed (or approved), the tool is running; still
		// nothing to show. With no approval id no human is involved:
		// Running says so, and Await(RequestID) works either way.
		p := &PendingApproval{RequestID: s.RequestID, ApprovalID: s.ApprovalRequestID, Summary: s.Summary, ReceiptID: s.ReceiptID,
			Running: s.Status == kernel.StatusDispatching}
		if s.Deadline > 0 {
			p.Deadline = time.Unix(s.Deadline, 0)
		}
		return p, nil
	case StatusDenied, StatusCancelled:
		return s.resolution().result(), nil
	}
	return nil, fmt.Errorf("chio: call %s: unknown status %q from chiod", s.RequestID, s.Status)
}

func (s *callState) resolution() *Resolution {
	r := &Resolution{Status: s.Status, RequestID: s.RequestID, ApprovalID: s.ApprovalRequestID, ReceiptID: s.ReceiptID,
		Output: s.Output, ToolError: s.ToolError, Execution: s.Execution, Reason: s.Reason, Guard: s.Guard}
	if a := s.Approval; a != nil {
		r.Approver, r.ApproverName, r.Note, r.AmendedArguments = a.Approver, a.ApproverDisplayName, a.Note, a.AmendedArguments
		// Arguments present mean an amendment whatever the flag says.
		r.Amended = a.Amended || len(a.AmendedArguments) > 0 && string(a.AmendedArguments) != "null"
	}
	return r
}

// result maps a final resolution to the typed result CallTool returns.
func (r *Resolution) result() Result {
	if r.Status == StatusAllowed {
		return &Allowed{RequestID: r.RequestID, ReceiptID: r.ReceiptID, Output: r.Output, ToolError: r.ToolError, Execution: r.Execution,
			ApprovalID: r.ApprovalID, Amended: r.Amended, AmendedArguments: r.AmendedArguments}
	}
	return &Denied{Status: r.Status, RequestID: r.RequestID, ReceiptID: r.ReceiptID, Reason: r.Reason, Guard: r.Guard,
		ApprovalID: r.ApprovalID, Amended: r.Amended, AmendedArguments: r.AmendedArguments}
}

// Cancel withdraws a parked call before a human decided it: the call ends
// cancelled, with a `cancelled` receipt, and awaiters see it. The agent's
// key signs the cancellation (a read proof cannot stand in for it); a
// client with WithBearer(admin token) cancels as an operator instead.
// Cancelling a request already decided is ErrConflict; the agent's cancel
// of a call whose capability was revoked or has expired is ErrUnauthorized
// (an operator's admin token still cancels it). An answer that is not the
// cancelled call is an error, never a Resolution. A cancel whose
// commit failed in chiod's store but may have reached it is
// ErrOutcomeUnknown: Await tells whether the call was cancelled.
func (c *Client) Cancel(ctx context.Context, approvalID, reason string) (*Resolution, error) {
	if err := checkApprovalID(approvalID); err != nil {
		return nil, err
	}
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("%w: a cancellation needs a reason", ErrBadRequest)
	}
	body, err := encodeJSON(map[string]string{"reason": reason})
	if err != nil {
		return nil, err
	}
	hdr := http.Header{}
	switch {
	case c.key != nil:
		hdr.Set(statusProofHeader, signCancelProof(*c.key, approvalID, reason, time.Now()))
	case c.bearer != "":
		hdr.Set("Authorization", "Bearer "+c.bearer)
	default:
		return nil, fmt.Errorf("%w: cancelling needs the agent key or an admin token", ErrUnauthorized)
	}
	var st callState
	if _, err := c.send(ctx, http.MethodPost, "/approvals/"+url.PathEscape(approvalID)+"/cancel", body, hdr, &st, http.StatusOK); err != nil {
		return nil, err
	}
	// The cancelled call of this approval, not another's withdrawal.
	if st.Status != StatusCancelled || st.ApprovalRequestID != approvalID {
		// chiod answers a cancel with the cancelled call, or an error. An
		// allowed or denied call, or a status this SDK does not know, is
		// not a withdrawal: fail closed, as the Python and TypeScript SDKs.
		return nil, fmt.Errorf("chio: cancel %s: unexpected answer from chiod: status %q of approval %.140q", approvalID, st.Status, st.ApprovalRequestID)
	}
	return st.resolution(), nil
}

// Await blocks until the call named by id (an approval id "ar-…" or a
// request id) is allowed and executed, denied or cancelled, and returns how
// it ended; a denial is a Resolution, not an error. It needs only the id
// and the same agent key (or a bearer): the process that made the call may
// be gone. A call that already ended answers at once with its stored output.
//
// An id outside chiod's rule (approval.ValidID) is [ErrBadRequest], sent
// nowhere; so for Status and ResumeWithApproval.
//
// Await long-polls and reconnects through transport errors and chiod
// restarts until ctx ends; a ctx deadline returns an error wrapping
// [ErrTimedOut] (the call may still be pending).
func (c *Client) Await(ctx context.Context, id string) (*Resolution, error) {
	requestID, err := c.requestIDOf(ctx, id)
	if err != nil {
		return nil, c.waitErr(ctx, id, "unresolved", err)
	}
	status := "unresolved"
	backoff := reconnectFirst
	for {
		wait := longPoll
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if wait <= 0 {
			return nil, c.waitErr(ctx, id, status, errWaitBudget)
		}
		started := time.Now()
		var st *callState
		err := c.retryRead(ctx, func(ctx context.Context) (err error) {
			st, err = c.getCall(ctx, requestID, wait)
			return err
		})
		if err != nil {
			return nil, c.waitErr(ctx, id, status, err)
		}
		status = st.Status
		if final(st.Status) {
			return st.resolution(), nil
		}
		if st.Status != kernel.StatusPendingApproval && st.Status != kernel.StatusDispatching {
			// Neither ended nor waiting: an answer chiod never sends.
			// Fail closed at once rather than poll it again in a loop.
			return nil, fmt.Errorf("chio: await %s: unknown status %q from chiod", id, st.Status)
		}
		if time.Since(started) < wait/2 {
			// Still pending, answered well before the wait passed (a
			// proxy that drops ?wait=, a chiod shutting down): pause as
			// after a failure, rather than poll again in a tight loop.
			if sleepCtx(ctx, backoff) != nil {
				return nil, c.waitErr(ctx, id, status, ctx.Err())
			}
			backoff = min(2*backoff, reconnectMax)
		} else {
			backoff = reconnectFirst
		}
	}
}

// Status reads a call's state once, without waiting: *Allowed, *Denied, or
// *PendingApproval while a human decides, or with Running set while the
// allowed (or approved) tool runs — then with ApprovalID "" if no human
// was involved. Await(ctx, p.RequestID) finishes the wait in every case.
func (c *Client) Status(ctx context.Context, id string) (Result, error) {
	requestID, err := c.requestIDOf(ctx, id)
	if err != nil {
		return nil, err
	}
	st, err := c.getCall(ctx, requestID, 0)
	if err != nil {
		return nil, err
	}
	return st.result()
}

// ResumeWithApproval presents a signed approval token obtained out of band
// (from a channel, a workflow engine) and then awaits the call, as Await.
// A token already presented (or a request already resolved) is not an
// error here: the wait reports how the call ended. With a quorum, the wait
// lasts until the other approvers have decided.
func (c *Client) ResumeWithApproval(ctx context.Context, approvalID string, token []byte) (*Resolution, error) {
	if err := checkApprovalID(approvalID); err != nil {
		return nil, err
	}
	err := c.retryRead(ctx, func(ctx context.Context) error {
		_, err := c.Respond(ctx, approvalID, token)
		return err
	})
	// Conflict after a retry is our own token, consumed by the attempt
	// whose answer was lost; otherwise someone decided first. A recorded
	// vote whose call is not finished yet: recovery finishes it. Either way
	// the call's state is the answer.
	if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrVoteRecorded) {
		return nil, err
	}
	return c.Await(ctx, approvalID)
}

// checkApprovalID refuses, before anything is sent, an id that is not an
// approval id ("ar-…") within chiod's rule for ids (approval.ValidID).
func checkApprovalID(id string) error {
	if !strings.HasPrefix(id, "ar-") || !approval.ValidID(id) {
		return fmt.Errorf("%w: %q is not an approval id (ar-…, %s)", ErrBadRequest, id, approval.IDRule)
	}
	return nil
}

// requestIDOf maps an approval id to its parked call's request id.
func (c *Client) requestIDOf(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%w: empty id", ErrBadRequest)
	}
	if !approval.ValidID(id) {
		// chiod's rule for request and approval ids, checked before
		// anything is sent (as CallTool checks a request id).
		return "", fmt.Errorf("%w: id %q must be %s", ErrBadRequest, id, approval.IDRule)
	}
	if !strings.HasPrefix(id, "ar-") {
		return id, nil
	}
	var req *approval.Request
	err := c.retryRead(ctx, func(ctx context.Context) (err error) {
		req, err = c.Approval(ctx, id)
		return err
	})
	if err != nil {
		return "", err
	}
	if req.RequestID == "" {
		return "", fmt.Errorf("chio: approval %s names no call", id)
	}
	return req.RequestID, nil
}

// getCall is one GET /v1/calls/{id}, long-polling for wait.
func (c *Client) getCall(ctx context.Context, requestID string, wait time.Duration) (*callState, error) {
	hdr, err := c.readAuth(requestID)
	if err != nil {
		return nil, err
	}
	path := "/v1/calls/" + url.PathEscape(requestID)
	if wait > 0 {
		path += "?wait=" + wait.Round(time.Millisecond).String()
	}
	ctx, cancel := context.WithTimeoutCause(ctx, wait+pollMargin, errNoAnswer)
	defer cancel()
	var st callState
	status, err := c.send(ctx, http.MethodGet, path, nil, hdr, &st, http.StatusOK)
	if err != nil {
		return nil, err
	}
	if err := st.names(requestID, status); err != nil {
		return nil, err
	}
	return &st, nil
}

// retryRead runs f until it succeeds, fails in a way asking again will
// not change, or ctx ends. Only reads and token presentation (which the
// kernel makes single-use) go through it.
func (c *Client) retryRead(ctx context.Context, f func(context.Context) error) error {
	backoff := reconnectFirst
	for {
		err := f(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		if ctx.Err() != nil {
			return err
		}
		d, ok := retryWait(ctx, err, backoff)
		if !ok || sleepCtx(ctx, d) != nil {
			return err
		}
		backoff = min(2*backoff, reconnectMax)
	}
}

// errWaitBudget: the ctx deadline leaves no time for another poll.
var errWaitBudget = errors.New("no time left before the deadline")

// waitErr wraps a failed wait: a passed ctx deadline is ErrTimedOut, and
// still wraps context.DeadlineExceeded for callers that test for that.
func (c *Client) waitErr(ctx context.Context, id, status string, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("chio: await %s: %w", id, ctx.Err())
	case ctx.Err() != nil || errors.Is(err, errWaitBudget):
		return fmt.Errorf("chio: await %s (still %s): %w: %w", id, status, ErrTimedOut, context.DeadlineExceeded)
	}
	return fmt.Errorf("chio: await %s: %w", id, err)
}
