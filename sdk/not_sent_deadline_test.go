package chio

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// notSentFor checks err is a *NotSentError for requestID that says the
// caller's context ended it, and never ErrOutcomeUnknown.
func notSentFor(t *testing.T, err error, requestID string) {
	t.Helper()
	if errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a call never sent reads as outcome unknown: %v", err)
	}
	var ns *NotSentError
	if !errors.As(err, &ns) || ns.RequestID != requestID || !errors.Is(err, ErrNotSent) {
		t.Fatalf("err = %v, want a *NotSentError for %s", err, requestID)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want it to say the context's deadline ended the call", err)
	}
}

// Every attempt is refused (chiod is down) and the caller's deadline ends
// the call during a backoff: nothing was ever sent, so the call did not
// run. It was reported as outcome unknown, "it may have run".
func TestCallToolDeadlineAfterRefusedAttemptsIsNotSent(t *testing.T) {
	c := clientAt(t, "http://"+closedPort(t))
	// Refusals come at once; the backoffs (250 ms, 500 ms, 1 s) outlast this.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := c.CallTool(ctx, Call{Server: "pay", Tool: "issue_refund", RequestID: "req-refused-deadline"})
	notSentFor(t, err, "req-refused-deadline")
}

// The first attempt reaches the server and its answer is lost; the later
// ones are refused and the deadline ends the call during a backoff. The
// first attempt may have run the call: outcome unknown, whatever followed.
func TestCallToolDeadlineAfterALostAnswerIsOutcomeUnknown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		ln.Close() // every later attempt is refused
		if err != nil {
			read <- err
			return
		}
		defer conn.Close() // no answer
		_, err = http.ReadRequest(bufio.NewReader(conn))
		read <- err
	}()
	c := clientAt(t, "http://"+ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	_, err = c.CallTool(ctx, Call{Server: "pay", Tool: "issue_refund", RequestID: "req-lost-deadline"})
	if rerr := <-read; rerr != nil {
		t.Fatalf("the first attempt did not reach the server: %v", rerr)
	}
	var lost *OutcomeUnknownError
	if !errors.As(err, &lost) || lost.RequestID != "req-lost-deadline" || errors.Is(err, ErrNotSent) {
		t.Fatalf("err = %v, want an *OutcomeUnknownError for req-lost-deadline", err)
	}
}
