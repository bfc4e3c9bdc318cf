package chio

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the context ended") {
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

// The connect timeout bounds the connect only: an answer slower than it,
// on a connection that was made, still arrives.
func TestConnectTimeoutDoesNotCutASlowAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // stands for a slow answer
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"bad_request","message":"slow refusal"}`))
	}))
	defer srv.Close()
	k := clientAt(t, "http://127.0.0.1:1")
	c, err := NewClient(srv.URL, WithKey(*k.key), WithCapability(k.capRaw), WithConnectTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-slow"})
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "slow refusal") {
		t.Fatalf("err = %v, want chiod's slow 400", err)
	}
}

// A TLS handshake that does not finish within the connect timeout (the
// server accepts and never answers the ClientHello) leaves the connection
// unready: nothing of the request was written. Not sent, as in the
// TypeScript SDK, whose connect timeout (undici's) covers the handshake.
func TestCallToolTLSHandshakeStallIsNotSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() }) // held open, silent
		}
	}()
	k := clientAt(t, "http://127.0.0.1:1")
	c, err := NewClient("https://"+ln.Addr().String(), WithKey(*k.key), WithCapability(k.capRaw),
		WithConnectTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-tls-stall"})
	var ns *NotSentError
	if errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &ns) || ns.RequestID != "req-tls-stall" {
		t.Fatalf("err = %v, want a *NotSentError for req-tls-stall", err)
	}
}
