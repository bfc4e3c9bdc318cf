package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

func init() {
	register("await ID", "wait for an approval (ar-…) or call (request id): exit 0 executed, 4 denied or cancelled, 5 timed out, 6 no result (tool failed, not delivered or outcome unknown)", runAwait)
}

const (
	// awaitPoll is one long-poll's wait; the server caps it at 60 s.
	awaitPoll = 30 * time.Second
	// awaitMaxBackoff caps the pause between reconnect attempts.
	awaitMaxBackoff = 5 * time.Second
)

// awaiter authorizes its reads with a bearer token from the environment,
// or else with a Chio-Proof signed by the agent's own key.
type awaiter struct {
	// ctx is cancelled by a signal (onInterrupt): the wait stops at once
	// with an interrupted error.
	ctx context.Context
	r   *remote
	key *keys.PrivateKey // nil: bearer
}

func (a *awaiter) auth(id string) http.Header {
	if a.key == nil {
		return nil
	}
	return http.Header{httpapi.StatusProofHeader: {httpapi.SignStatusProof(*a.key, id, time.Now())}}
}

func runAwait(e *Env, args []string) int {
	ctx, stopSignals := onInterrupt()
	defer stopSignals()
	fs := newFlags(e, "await")
	r := addRemote(fs, e)
	timeout := fs.Duration("timeout", 600*time.Second, "give up (exit 5) after this long")
	keyFile := fs.String("key", "", "agent private key, to sign a Chio-Proof when no bearer token is set (env CHIO_KEY)")
	pos, err := parse(fs, args)
	if err != nil {
		return ExitUsage
	}
	if err := wantArgs("await", pos, 1); err != nil {
		return fail(e, err)
	}
	if *timeout <= 0 {
		return fail(e, usageErr("await", "--timeout must be positive"))
	}
	if err := r.checkOutput(); err != nil {
		return fail(e, err)
	}
	a, err := newAwaiter(ctx, e, r, *keyFile, "await")
	if err != nil {
		return fail(e, err)
	}
	deadline := time.Now().Add(*timeout)
	id := pos[0]
	requestID := id
	if strings.HasPrefix(id, "ar-") {
		var v approvalView
		if err := a.retry(deadline, func(ctx context.Context) error {
			_, err := r.send(ctx, "GET", "/approvals/"+url.PathEscape(id), nil, a.auth(id), &v)
			return err
		}); err != nil {
			return a.stop(e, id, *timeout, nil, err)
		}
		if v.Request.ApprovalID != id || v.Request.RequestID == "" {
			// Not an answer about this approval: the call it names is
			// another's, whose outcome must never read as this one's.
			return fail(e, fmt.Errorf("%w: asked for %s, the answer is about %q", errBadResponse, id, v.Request.ApprovalID))
		}
		requestID = v.Request.RequestID
	}
	st, err := a.settle(requestID, deadline)
	if err != nil {
		return a.stop(e, id, *timeout, st, err)
	}
	return printAwaited(e, r, st, outcomeCode(&st.Outcome))
}

// newAwaiter authorizes reads with the bearer token from the environment,
// or else with the agent key (--key or CHIO_KEY) for cmd.
func newAwaiter(ctx context.Context, e *Env, r *remote, keyFile, cmd string) (*awaiter, error) {
	a := &awaiter{ctx: ctx, r: r}
	if bearerFromEnv(e) != "" {
		return a, nil
	}
	kf := envOr(e, keyFile, "CHIO_KEY")
	if kf == "" {
		return nil, usageErr(cmd, "needs CHIO_READ_TOKEN / CHIO_ADMIN_TOKEN, or the agent's --key (CHIO_KEY)")
	}
	k, err := e.loadKey(kf)
	if err != nil {
		return nil, err
	}
	a.key = &k
	return a, nil
}

// settle long-polls the call requestID until it is allowed, denied or
// cancelled, and returns that state; a poll answered well before its wait
// is followed by a pause, backing off. At the deadline it returns
// errTimedOut with the last state seen (nil if none).
func (a *awaiter) settle(requestID string, deadline time.Time) (*httpapi.CallStatus, error) {
	var st *httpapi.CallStatus
	backoff := 250 * time.Millisecond
	for {
		var cur callAnswer // read as chio call reads a call's answer
		started, asked := time.Now(), min(awaitPoll, time.Until(deadline))
		err := a.retry(deadline, func(ctx context.Context) error {
			wait := min(awaitPoll, time.Until(deadline)).Round(time.Millisecond)
			if wait <= 0 {
				wait = time.Millisecond
			}
			path := "/v1/calls/" + url.PathEscape(requestID) + "?wait=" + wait.String()
			_, err := a.r.send(ctx, "GET", path, nil, a.auth(requestID), &cur)
			return err
		})
		if err != nil {
			return st, err
		}
		// Only chiod's answer about this call counts: another call's
		// status, or one chiod never sends, ends the wait (exit 1), never
		// as this call's outcome nor as "still waiting" asked again at once.
		if cur.RequestID != requestID {
			return st, fmt.Errorf("%w: asked for call %s, the answer is about %q", errBadResponse, requestID, cur.RequestID)
		}
		st = &cur.CallStatus
		switch st.Status {
		case kernel.StatusAllowed, kernel.StatusDenied, kernel.StatusCancelled:
			return st, nil
		case kernel.StatusPendingApproval, kernel.StatusDispatching:
		default:
			return st, fmt.Errorf("%w: unexpected call status %q", errBadResponse, st.Status)
		}
		if !time.Now().Before(deadline) {
			return st, errTimedOut
		}
		if time.Since(started) < asked/2 {
			// Still pending, answered well before its wait (a proxy that
			// drops ?wait=, a chiod shutting down): pause as after a
			// failure rather than ask again at once, in a tight loop
			// until the deadline (as the SDKs' Await does).
			if !sleepCtx(a.ctx, min(backoff, time.Until(deadline))) {
				return st, context.Cause(a.ctx)
			}
			backoff = min(2*backoff, awaitMaxBackoff)
		} else {
			backoff = 250 * time.Millisecond
		}
	}
}

var errTimedOut = errors.New("timed out")

// retry runs one request, reconnecting after transport failures and 5xx
// answers (chiod restarting, a proxy in between) until the deadline.
// Answers that will not change by asking again (400, 401, 403, 404) end it.
func (a *awaiter) retry(deadline time.Time, f func(ctx context.Context) error) error {
	backoff := 250 * time.Millisecond
	for {
		if in, ok := interruption(a.ctx); ok {
			return in
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return errTimedOut
		}
		// The request may outlive the long-poll wait by a margin, never forever.
		ctx, cancel := context.WithTimeout(a.ctx, min(awaitPoll, remaining)+15*time.Second)
		err := f(ctx)
		cancel()
		if in, ok := interruptedAttempt(a.ctx, err); ok {
			return in
		}
		var ae *apiError
		if err == nil || errors.Is(err, errBadResponse) ||
			errors.As(err, &ae) && ae.Status < 500 && ae.Status != http.StatusTooManyRequests {
			return err
		}
		fmt.Fprintf(a.r.e.Stderr, "chio: %s; retrying\n", shown(err.Error())) // may quote the server
		if !sleepCtx(a.ctx, min(backoff, max(time.Until(deadline), 0))) {
			return context.Cause(a.ctx)
		}
		backoff = min(2*backoff, awaitMaxBackoff)
	}
}

// stop reports a timeout (exit 5), a signal (exit 130 / 143) or an error
// (exit 1).
func (a *awaiter) stop(e *Env, id string, timeout time.Duration, st *httpapi.CallStatus, err error) int {
	if in, ok := err.(interrupted); ok {
		return interruptedAwait(e, a.r, in, id, st)
	}
	if !errors.Is(err, errTimedOut) {
		return fail(e, err)
	}
	if st != nil && a.r.output != "table" {
		printJSON(e.Stdout, st, a.r.output == "jsonl")
	}
	status := "unresolved"
	if st != nil {
		status = st.Status
	}
	fmt.Fprintf(e.Stderr, "chio: timed out after %s waiting for %s (still %s)\n", timeout, id, status)
	return ExitTimedOut
}

// printAwaited prints the final state: the output on stdout and the human's
// note and amendment on stderr (table), or everything as JSON. Text from
// the tool or an approver is escaped (approval_text.go); the tool's
// output stays JSON equal in value (shown_output.go).
func printAwaited(e *Env, r *remote, st *httpapi.CallStatus, code int) int {
	if r.output != "table" {
		printJSON(e.Stdout, st, r.output == "jsonl")
		return code
	}
	switch st.Status {
	case kernel.StatusAllowed:
		if withoutResult(&st.Outcome) {
			fmt.Fprintf(e.Stderr, "allowed, but %s\n", shown(noResult(st.Execution, st.ToolError, "the tool failed: ")))
		}
		fmt.Fprintln(e.Stdout, shownOutput(st.Output))
	case kernel.StatusCancelled:
		fmt.Fprintf(e.Stdout, "cancelled: %s\n", shown(st.Reason))
	default:
		fmt.Fprintf(e.Stdout, "%s by %s: %s\n", shown(st.Status), shown(dash(st.Guard)), shown(st.Reason))
	}
	printApproval(e, st.Approval)
	return code
}

// printApproval says on stderr who decided a call, their note, and the
// arguments they amended (chio await, and chio call's retry of a decided
// call): the output on stdout is the amended call's.
func printApproval(e *Env, ap *httpapi.CallApproval) {
	if ap == nil || ap.Approver == "" {
		return
	}
	fmt.Fprintf(e.Stderr, "%s by %s\n", shown(ap.Status), shown(nameOr(ap.ApproverDisplayName, ap.Approver)))
	if ap.Note != "" {
		fmt.Fprintf(e.Stderr, "note: %s\n", shown(ap.Note))
	}
	if ap.Amended {
		fmt.Fprintf(e.Stderr, "amended arguments: %s\n", shownJSON(ap.AmendedArguments))
	}
}
