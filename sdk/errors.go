package chio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinels for conditions callers branch on (errors.Is). An [*APIError]
// matches the sentinel of its code.
var (
	// ErrBadRequest: the input was refused (by this package or by chiod, 400).
	ErrBadRequest = errors.New("chio: bad request")
	// ErrUnauthorized: the key, capability, proof or bearer was not accepted.
	ErrUnauthorized = errors.New("chio: unauthorized")
	// ErrNotFound: no such call or approval (401 answers for unknown ids
	// seen through a Chio-Proof, so that ids cannot be probed).
	ErrNotFound = errors.New("chio: not found")
	// ErrConflict: a request id reused for a different call, a token
	// already presented, or an approval no longer pending.
	ErrConflict = errors.New("chio: conflict")
	// ErrApprovalRejected: chiod refused a presented approval token.
	ErrApprovalRejected = errors.New("chio: approval token rejected")
	// ErrUnavailable: chiod itself answered that it could not decide (503
	// with its "unavailable" envelope), or a 429 (chiod's or a gateway's
	// rate limit); nothing was allowed by that request.
	// A call's error matches it only when no attempt's answer was lost.
	ErrUnavailable = errors.New("chio: unavailable")
	// ErrOutcomeUnknown: the answer was lost after the request may have
	// reached chiod — no complete HTTP answer, or a 5xx that is not chiod's
	// own (a proxy's 502 or 504 after forwarding). For a call, it MAY HAVE
	// RUN: never submit it again under a new request id. Retry it with the
	// same RequestID (the tool runs at most once) or Await that id; the
	// error is an [*OutcomeUnknownError] naming it.
	ErrOutcomeUnknown = errors.New("chio: outcome unknown")
	// ErrNotSent: [Client.CallTool] could not send the call — its last
	// attempt could not even connect to chiod (connection refused, no route,
	// a name that does not resolve, a connect that timed out: chiod is not
	// running or the URL is wrong), or the context ended the call before any
	// attempt got a connection, and no attempt's answer was lost. The call
	// did not run; it is safe to send it again. The error is a [*NotSentError] naming the
	// request id; it also matches ErrUnavailable (nothing was allowed).
	ErrNotSent = errors.New("chio: not sent")
	// ErrVoteRecorded: chiod's 500 "vote_recorded" to [Client.Respond]. The
	// approver's vote IS durable (counted, its token spent, the request
	// approved), but a step after it failed: the approved call is not
	// finished yet, and chiod finishes it when its store recovers
	// ([Client.Await] or [Client.Approval] tells how it ended). Do not vote
	// again (the same token is refused as a replay) and do not ask another
	// approver. It matches neither ErrOutcomeUnknown nor ErrUnavailable, and
	// is not retried.
	ErrVoteRecorded = errors.New("chio: vote recorded")
	// ErrVoteUncertain: chiod's 503 "vote_uncertain" to [Client.Respond].
	// The vote's own commit failed in a way that may still have reached
	// chiod's disk (an fsync error, a database COMMIT whose answer was
	// lost): the vote MAY OR MAY NOT be recorded, and may have approved,
	// and run, the call. Present the SAME token again once chiod recovers:
	// a recorded vote is refused as a replay ([ErrConflict]: "already
	// decided this request"), never counted twice; otherwise it counts
	// then. Do not ask another approver on the belief that it did nothing.
	// It matches neither ErrUnavailable (nothing allowed) nor
	// ErrOutcomeUnknown; [Client.ResumeWithApproval] retries it with the
	// same token, never a new one.
	ErrVoteUncertain = errors.New("chio: vote may or may not be recorded")

	// ErrTimedOut: the wait ended before a decision — the context's
	// deadline passed, or the approval's own deadline denied a confirm/ask.
	ErrTimedOut = errors.New("chio: timed out waiting for a human")
	// ErrDeclined: a human denied an Ask.
	ErrDeclined = errors.New("chio: declined by a human")
	// ErrDenied: a policy guard (not a human) denied a Confirm or Ask.
	ErrDenied = errors.New("chio: denied by policy")
	// ErrCancelled: a Confirm or Ask was withdrawn (by the agent or an
	// operator, [Client.Cancel]) before a human decided; no human said no.
	ErrCancelled = errors.New("chio: cancelled")
)

// APIError is chiod's error envelope ({"error": code, "message": text}).
type APIError struct {
	Status  int    `json:"-"` // HTTP status (the answer's, never a member of its body)
	Code    string `json:"error"`
	Message string `json:"message"`
	// RetryAfter is the answer's Retry-After (delta-seconds, or the time
	// until an HTTP-date; at most an hour; 0 if none, past or neither):
	// chiod (or a proxy before it) turned the request away for a while.
	// The SDK's own retries wait at least this long, or end at once if
	// the context's deadline is nearer.
	RetryAfter time.Duration `json:"-"`
}

// maxRetryAfter caps the Retry-After the SDK honours: a larger value is
// a server asking not to be retried; the caller's deadline decides.
const maxRetryAfter = time.Hour

// parseRetryAfter reads a Retry-After (RFC 9110 §10.2.3), capped at
// maxRetryAfter without overflowing: delta-seconds (chiod sends these), or
// an HTTP-date (a proxy or load balancer in front of chiod may send one),
// read as the time from now until then. A date past, or anything else, is 0.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	n, err := strconv.ParseUint(v, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) || err == nil && n >= uint64(maxRetryAfter/time.Second):
		return maxRetryAfter
	case err == nil:
		return time.Duration(n) * time.Second
	}
	when, err := http.ParseTime(v) // IMF-fixdate, RFC 850 or asctime, all GMT
	if err != nil {
		return 0
	}
	return min(max(time.Until(when), 0), maxRetryAfter)
}

// retryAfterOf is err's Retry-After, 0 if it carries none.
func retryAfterOf(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.RetryAfter
	}
	return 0
}

// retryWait is how long to wait before asking again after err: the
// backoff, or chiod's Retry-After if longer. ok is false when ctx's
// deadline comes first: asking again is pointless, err is the answer.
func retryWait(ctx context.Context, err error, backoff time.Duration) (d time.Duration, ok bool) {
	d = max(backoff, retryAfterOf(err))
	if dl, has := ctx.Deadline(); has && time.Until(dl) < d && retryAfterOf(err) > backoff {
		return d, false
	}
	return d, true
}

func (e *APIError) Error() string {
	return fmt.Sprintf("chio: %s (%d): %s", e.Code, e.Status, e.Message)
}

// Is matches the sentinel for e's code. A 502 or 504, or a 5xx whose body
// is not chiod's envelope (a proxy's error page), is ErrOutcomeUnknown: a
// gateway may send it after it forwarded the request and lost the answer.
// A 429 whose body is not chiod's envelope (a gateway's rate limit) is
// ErrUnavailable, as in the TypeScript and Python SDKs: the request was
// turned away, nothing was allowed by it; a 401 or 404 without chiod's
// envelope is ErrUnauthorized or ErrNotFound, as there.
func (e *APIError) Is(target error) bool {
	if e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout {
		return target == ErrOutcomeUnknown
	}
	switch e.Code {
	case "bad_request":
		return target == ErrBadRequest
	case "unauthorized":
		return target == ErrUnauthorized
	case "not_found":
		return target == ErrNotFound
	case "conflict", "replay_detected":
		return target == ErrConflict
	case "approval_rejected":
		return target == ErrApprovalRejected
	case "unavailable":
		return target == ErrUnavailable
	case "outcome_unknown": // chiod's own: decided, outcome not recorded yet
		return target == ErrOutcomeUnknown
	case "vote_recorded": // chiod's own: the vote is durable, a later step failed
		return target == ErrVoteRecorded
	case "vote_uncertain": // chiod's own: the vote's commit may or may not have landed
		return target == ErrVoteUncertain
	}
	// A body that is not chiod's envelope (a gateway's, an auth proxy's)
	// is classified by status, as in the TypeScript and Python SDKs.
	switch e.Status {
	case http.StatusTooManyRequests:
		return target == ErrUnavailable
	case http.StatusUnauthorized:
		return target == ErrUnauthorized
	case http.StatusNotFound:
		return target == ErrNotFound
	}
	return target == ErrOutcomeUnknown && e.Status >= 500
}

// OutcomeUnknownError is a call whose answer was lost ([ErrOutcomeUnknown]):
// it may have run. Retry it with the same RequestID, or Await(RequestID).
// It unwraps to the last failure (a transport error, a gateway's
// [*APIError], or the context's error) — except chiod's own 503, which
// would read as [ErrUnavailable] ("nothing was allowed"), untrue here.
type OutcomeUnknownError struct {
	RequestID string
	Err       error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("chio: call %s: outcome unknown, it may have run (retry with the same request id or await it): %v", e.RequestID, e.Err)
}

// Unwrap hides chiod's own 503: even when the last attempt met it, an
// earlier attempt whose answer was lost may have run the call.
func (e *OutcomeUnknownError) Unwrap() error {
	if errors.Is(e.Err, ErrUnavailable) {
		return nil
	}
	return e.Err
}

func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// NotSentError is a call that was not sent ([ErrNotSent]): the last
// attempt could not connect to chiod, or the context ended the call while
// it was connecting or waiting to retry, and every earlier attempt either
// could not connect either or was turned away by chiod (503, 429). It did
// not run. It unwraps to the last attempt's connection error, or to the
// context's error.
type NotSentError struct {
	RequestID string
	Err       error
}

func (e *NotSentError) Error() string {
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return fmt.Sprintf("chio: call %s was not sent, it did not run (the context ended before any attempt reached chiod): %v", e.RequestID, e.Err)
	}
	return fmt.Sprintf("chio: call %s was not sent, it did not run (could chiod be down, or the URL wrong?): %v", e.RequestID, e.Err)
}

func (e *NotSentError) Unwrap() error { return e.Err }

// Is matches ErrNotSent and ErrUnavailable, never ErrOutcomeUnknown (which
// the connection error alone, an errTransport, would claim).
func (e *NotSentError) Is(target error) bool { return target == ErrNotSent || target == ErrUnavailable }

// retryable reports whether asking again may give a different answer:
// chiod restarting, overloaded or behind a proxy that failed. A recorded
// vote is final: presenting its token again is only refused as a replay.
// An uncertain vote (503 vote_uncertain) is retried: only Respond meets
// it, and only with the same token, which settles it.
func (e *APIError) retryable() bool {
	if e.Is(ErrVoteRecorded) {
		return false
	}
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}
