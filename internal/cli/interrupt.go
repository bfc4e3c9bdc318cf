package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
)

// Exit codes of a `chio call` or `chio await` stopped by a signal: the
// shell's 128 + signal number, so scripts and timeout wrappers read them
// as they read any interrupted command.
const (
	ExitInterrupted = 130 // SIGINT (Ctrl-C)
	ExitTerminated  = 143 // SIGTERM (`timeout 30 chio call …`)
)

// interrupted is the cause of a command's context cancelled by a signal.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted (" + i.name() + ")" }

func (i interrupted) name() string {
	if i.sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

func (i interrupted) exitCode() int {
	if i.sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

// onInterrupt catches SIGINT and SIGTERM for a command that must say, when
// stopped, what it leaves behind. The returned context is cancelled by the
// first of them, with an interrupted as its cause; stop restores the
// default (a later signal kills the process).
func onInterrupt() (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(interrupted{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruption reports whether ctx was cancelled by a signal, and which.
func interruption(ctx context.Context) (interrupted, bool) {
	var in interrupted
	ok := errors.As(context.Cause(ctx), &in)
	return in, ok
}

// interruptedAttempt: a request made under ctx failed and a signal has
// cancelled ctx, so its answer did not arrive whole. An error answer that
// did arrive (*apiError) is an answer, whatever came after it.
func interruptedAttempt(ctx context.Context, err error) (interrupted, bool) {
	var ae *apiError
	if err == nil || errors.As(err, &ae) {
		return interrupted{}, false
	}
	return interruption(ctx)
}

// Where a `chio call` was when a signal stopped it.
const (
	// callUnsent: no attempt got a connection to chiod, so not one byte
	// of the request was written; nothing can run.
	callUnsent = iota
	// callInFlight: an attempt was (or may have been) written and its
	// answer did not arrive: chiod may have it, and may run it or park it.
	callInFlight
	// callExecuting: chiod answered that it allowed the call and is
	// executing it; chio was waiting for it to settle.
	callExecuting
)

// interruptedCall reports a `chio call` stopped by a signal: never as a
// decision or a failure, but what was sent and how to learn the outcome
// without running the tool twice. givenID: the id came from --request-id.
func interruptedCall(e *Env, in interrupted, sc *signedCall, where int, givenID bool) int {
	call := sc.call
	id := shown(call.RequestID)
	switch where {
	case callUnsent:
		if givenID {
			fmt.Fprintf(e.Stderr, "chio: %s before the call was sent: this run sent nothing to chiod (request id %s was not sent by it).\n", in, id)
		} else {
			fmt.Fprintf(e.Stderr, "chio: %s before the call was sent: this run sent nothing to chiod and started no call; there is no request id to await.\n", in)
		}
		return in.exitCode()
	case callInFlight:
		fmt.Fprintf(e.Stderr, "chio: %s before chiod's answer arrived.\n", in)
		fmt.Fprintf(e.Stderr, "chio: request id: %s — the call may have reached chiod, and may run or wait for approval without this process; its outcome is unknown.\n", id)
	case callExecuting:
		fmt.Fprintf(e.Stderr, "chio: %s while the call was executing.\n", in)
		fmt.Fprintf(e.Stderr, "chio: request id: %s — chiod allowed the call and it goes on without this process; its outcome is unknown here.\n", id)
	}
	howToResume(e, call.Server, call.Tool, call.RequestID)
	return in.exitCode()
}

// interruptedAwait reports a `chio await` stopped by a signal. Waiting
// changes nothing: the call goes on, and another await picks it up.
func interruptedAwait(e *Env, r *remote, in interrupted, id string, st *httpapi.CallStatus) int {
	seen := "no answer yet"
	if st != nil {
		if r.output != "table" {
			printJSON(e.Stdout, st, r.output == "jsonl")
		}
		seen = "last seen " + st.Status
		if st.RequestID != id {
			seen = "call " + st.RequestID + ", " + seen
		}
	}
	fmt.Fprintf(e.Stderr, "chio: %s while waiting for %s (%s); the call goes on without this process.\n", in, shown(id), shown(seen))
	fmt.Fprintf(e.Stderr, "chio: wait again with: chio await %s\n", shown(id))
	return in.exitCode()
}

// sleepCtx waits d, or less if ctx ends first: false then.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
