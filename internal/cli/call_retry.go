package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/chiokernel/chio/internal/connect"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// Retry policy for POST /v1/calls, as the SDKs keep it. A retry re-sends
// the SAME request id and content, which chiod deduplicates on, so it can
// never run a tool twice; it is bounded, so a chiod that keeps failing
// surfaces as an error rather than a hang.
const (
	callAttempts     = 4
	callFirstBackoff = 250 * time.Millisecond
	// callAttemptTimeout bounds one attempt, so a connection that died
	// silently is noticed and the call re-sent (the SDKs' 60 s).
	callAttemptTimeout = 60 * time.Second
	// callProofRefresh: a proof older than this is re-signed before a
	// retry (chiod refuses proofs more than 60 s old).
	callProofRefresh = 30 * time.Second
)

// postCall POSTs the call and decodes its outcome (200, 202, or a 403
// denial). When the answer is lost — no complete HTTP answer, or a 5xx or
// 429 (a proxy that failed, chiod restarting or overloaded) — it asks
// again with the same request id, and returns the last error once the
// attempts are spent. lost reports whether ANY attempt's answer was lost:
// that attempt may have run the call, whatever the later ones met (a 4xx
// after a lost answer does not make the outcome known).
//
// A signal (ctx cancelled, onInterrupt) stops it at once with an
// interrupted error: no attempt starts after it, and sc.sent tells whether
// any attempt could have reached chiod.
//
// The outcome carries the approval when chiod adds it (a retry of a call a
// human decided): the approver, their note and any amended arguments.
func postCall(ctx context.Context, e *Env, r *remote, sc *signedCall) (out httpapi.CallStatus, lost bool, err error) {
	backoff := callFirstBackoff
	for attempt := 1; ; attempt++ {
		if in, ok := interruption(ctx); ok {
			return httpapi.CallStatus{}, lost, in
		}
		if time.Since(sc.signedAt) > callProofRefresh {
			if err := sc.sign(time.Now()); err != nil {
				return httpapi.CallStatus{}, lost, err
			}
		}
		out = httpapi.CallStatus{}
		// A request's bytes are written only once it has a connection
		// (after the TLS handshake, for https): until then, nothing of this
		// attempt was sent.
		var connected atomic.Bool
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true); sc.sent.Store(true) }}
		attemptCtx, cancel := context.WithTimeout(httptrace.WithClientTrace(ctx, trace), callAttemptTimeout)
		var (
			code int
			ans  callAnswer
		)
		code, err = r.do(attemptCtx, "POST", "/v1/calls", sc.call, &ans, 200, 202, 403)
		out = ans.CallStatus
		if err != nil && !connected.Load() && (connect.NeverMade(err) || attemptCtx.Err() != nil) {
			// No connection was made (refused, the connect timeout, or
			// the attempt's own limit while connecting): not sent.
			err = &attemptNotSent{err}
		}
		cancel()
		if in, ok := interruptedAttempt(ctx, err); ok {
			return httpapi.CallStatus{}, lost, in
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.Status >= 200 && ae.Status < 300 {
			// A success chiod never answers a call with (a transforming
			// proxy's 203 for chiod's 200, a 201, a 204): something says
			// the request went through, so the call may have run.
			err = fmt.Errorf("%w: a %d answer", errBadResponse, ae.Status)
		}
		if err == nil {
			// An error envelope, whatever outcome it also carries, is
			// chiod's error or, naming none, unreadable (call_answer.go).
			err = ans.envelopeError(code)
		}
		if err == nil && callHTTPStatus(out.Status) != code {
			// Not chiod's answer (a 403 saying "allowed", a 200 saying
			// "denied"): neither success nor a decision, so unknown.
			err = fmt.Errorf("%w: a %d answer with call status %q", errBadResponse, code, out.Status)
		}
		if err != nil && answerLost(err) {
			lost = true
		}
		if err == nil || !retryableCall(err) || attempt == callAttempts {
			return out, lost, err
		}
		// chiod's Retry-After, when longer than the backoff, is honoured;
		// one longer than an attempt's own limit ends the retries: its
		// refusal is the answer now.
		pause := backoff
		if after := retryAfterOf(err); after > callAttemptTimeout {
			return out, lost, err
		} else if after > pause {
			pause = after
		}
		// The error may quote the server (a proxy's page): escaped.
		fmt.Fprintf(e.Stderr, "chio: %s; retrying request %s in %s\n", shown(err.Error()), shown(sc.call.RequestID), pause)
		if !sleepCtx(ctx, pause) {
			return httpapi.CallStatus{}, lost, context.Cause(ctx)
		}
		backoff *= 2
	}
}

// retryableCall: the request got no complete answer, or one that asking
// again may change (5xx, 429). Anything else will not change.
func retryableCall(err error) bool {
	var ae *apiError
	return errors.Is(err, errUnreachable) ||
		errors.As(err, &ae) && (ae.Status >= 500 || ae.Status == http.StatusTooManyRequests)
}

// retryAfterOf is err's Retry-After, 0 if it carries none.
func retryAfterOf(err error) time.Duration {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.RetryAfter
	}
	return 0
}

// turnedAway reports an answer by which the call was not taken: chiod's
// own "unavailable" envelope (its store down, too many waiters: a 503, or
// the 429 of its rate limit) or any 429 (a gateway's rate limit). Nothing
// was allowed by that request, as the SDKs read it (ErrUnavailable). A 502
// or 504 is never this: a gateway sends them after forwarding the request.
func turnedAway(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status != http.StatusBadGateway && ae.Status != http.StatusGatewayTimeout &&
		(ae.Code == httpapi.CodeUnavailable || ae.Status == http.StatusTooManyRequests)
}

// answerLost reports whether a failed POST may have reached chiod and run
// the call without its outcome reaching us: no complete answer, an answer
// that is not chiod's (a proxy's 5xx), that could not be read, or that
// says so (outcome_unknown). A call chiod turned away (turnedAway) was
// not taken.
func answerLost(err error) bool {
	var ae *apiError
	return retryableCall(err) && !neverSent(err) && !turnedAway(err) || errors.Is(err, errBadResponse) ||
		// chiod's own "outcome unknown", with whatever HTTP status it
		// came (the SDKs' ErrOutcomeUnknown): the call may have run.
		errors.As(err, &ae) && ae.Code == httpapi.CodeOutcomeUnknown
}

// neverSent reports an attempt that certainly did not reach chiod: it never
// got a connection (refused, no route, a name that does not resolve, a TCP
// connect or TLS handshake not done within --connect-timeout), so not a
// byte of the call was written. postCall decides it as the Go SDK does
// (internal/connect), and only for an attempt whose trace saw no
// connection: a failure after one was made is never this.
func neverSent(err error) bool {
	var ns *attemptNotSent
	return errors.As(err, &ns)
}

// attemptNotSent is an attempt that never got a connection to chiod.
type attemptNotSent struct{ err error }

func (e *attemptNotSent) Error() string { return e.err.Error() }
func (e *attemptNotSent) Unwrap() error { return e.err }

// lostAnswer reports a call whose outcome is unknown (exit 1). The call may
// have run, so it names the request id and how to learn the outcome
// without running the tool again: the same id retried or awaited.
func lostAnswer(e *Env, call *kernel.ToolCall, err error) int {
	fail(e, err)
	fmt.Fprintf(e.Stderr, "chio: request id: %s — the call may have run; its outcome is unknown.\n", shown(call.RequestID))
	howToResume(e, call.Server, call.Tool, call.RequestID)
	return ExitError
}

// howToResume names the two ways to learn a sent call's outcome without
// running its tool twice: retry under the same id, or await it. The words
// come from the command line, so they are shown escaped.
func howToResume(e *Env, server, tool, id string) {
	fmt.Fprintf(e.Stderr, "chio: retry it under the same id (the tool runs at most once): chio call %s %s --request-id %s (with the same --args and --intent)\n",
		shown(server), shown(tool), shown(id))
	fmt.Fprintf(e.Stderr, "chio: or wait for its outcome: chio await %s\n", shown(id))
}

// callHTTPStatus is the HTTP status chiod answers a call outcome with
// (httpapi's mapping): 200 allowed, 202 pending or dispatching, 403 denied
// or cancelled; 0 for a status chiod never sends.
func callHTTPStatus(status string) int {
	switch status {
	case kernel.StatusAllowed:
		return http.StatusOK
	case kernel.StatusPendingApproval, kernel.StatusDispatching:
		return http.StatusAccepted
	case kernel.StatusDenied, kernel.StatusCancelled:
		return http.StatusForbidden
	}
	return 0
}
