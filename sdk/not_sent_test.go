package chio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// clientAt is a client with an agent key and capability for base.
func clientAt(t *testing.T, base string) *Client {
	t.Helper()
	k := keys.FromSeed(make([]byte, 32))
	capRaw, _ := json.Marshal(map[string]any{"id": "cap-1", "subject": k.Public().String()})
	c, err := NewClient(base, WithKey(k), WithCapability(capRaw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// closedPort is the address of a port nothing listens on any more.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A chiod that is not running refuses every connection: not a byte of the
// call was written, so it did not run. That is ErrNotSent (and
// ErrUnavailable: nothing was allowed), naming the request id, never
// ErrOutcomeUnknown, which tells the caller a payment may have been made.
func TestCallToolRefusedEveryTimeIsNotSent(t *testing.T) {
	c := clientAt(t, "http://"+closedPort(t))
	_, err := c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-down"})
	var ns *NotSentError
	if !errors.As(err, &ns) || ns.RequestID != "req-down" || !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want a *NotSentError for req-down", err)
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a call never sent reads as outcome unknown: %v", err)
	}
	if !strings.Contains(err.Error(), "req-down") || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("error does not say which call was not sent: %v", err)
	}
}

// The first attempt reaches chiod and its answer is lost (the connection
// drops after the request was read); chiod then goes away and the retries
// are refused. The first attempt may have run the call: still outcome
// unknown, whatever the later attempts met.
func TestCallToolLostAnswerThenRefusedIsOutcomeUnknown(t *testing.T) {
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
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-lost"})
	if rerr := <-read; rerr != nil {
		t.Fatalf("the first attempt did not reach the server: %v", rerr)
	}
	var lost *OutcomeUnknownError
	if !errors.As(err, &lost) || lost.RequestID != "req-lost" || errors.Is(err, ErrNotSent) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want only an *OutcomeUnknownError for req-lost", err)
	}
}

// A connection that is made and then cut during the TLS handshake is not a
// dial error: it is never reported as not sent.
func TestCallToolTLSHandshakeCutIsOutcomeUnknown(t *testing.T) {
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
			conn.Close()
		}
	}()
	c := clientAt(t, "https://"+ln.Addr().String())
	_, err = c.CallTool(context.Background(), Call{Server: "pay", Tool: "issue_refund", RequestID: "req-tls"})
	var lost *OutcomeUnknownError
	if !errors.As(err, &lost) || lost.RequestID != "req-tls" || errors.Is(err, ErrNotSent) {
		t.Fatalf("err = %v, want an *OutcomeUnknownError for req-tls", err)
	}
}
