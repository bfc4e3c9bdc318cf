package cli_test

import (
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/testkit"
)

// stalledHandshakeURL is an https URL whose listener accepts every TCP
// connection and never answers the TLS handshake: no connection is ever
// ready to carry a request, so not a byte of one is written.
func stalledHandshakeURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return "https://" + ln.Addr().String()
}

// stalledConnectURL is the URL of a loopback listener whose TCP connects
// never complete (testkit.StalledConnectAddr).
func stalledConnectURL(t *testing.T) string { return "http://" + testkit.StalledConnectAddr(t) }

// wantNotSent checks chio call's report of a call no attempt sent: exit 1
// saying it was not sent, with no request id to retry or await.
func wantNotSent(t *testing.T, url, se string, code int, took time.Duration) {
	t.Helper()
	if code != cli.ExitError || strings.Contains(se, "may have run") || strings.Contains(se, "--request-id") ||
		!strings.Contains(se, "the call was not sent") || !strings.Contains(se, url) {
		t.Fatalf("exit %d after %v, stderr:\n%s\nwant exit 1 saying the call was not sent", code, took, se)
	}
	// Four attempts of 150 ms and 1.75 s of backoff, not net/http's own
	// 10 s handshake or 30 s dial timeouts.
	if took > 8*time.Second {
		t.Fatalf("took %v: --connect-timeout was not applied", took)
	}
}

// A TLS handshake that never completes wrote nothing of the call: once the
// connect timeout ends every attempt, chio call says it was not sent, as
// the SDKs do, never "the call may have run".
func TestCallStalledTLSHandshakeIsNotSent(t *testing.T) {
	url := stalledHandshakeURL(t)
	start := time.Now()
	_, se, code := chio(inflightAgent(t, url), "call", "--connect-timeout", "150ms", "demo", "echo", "--args", `{}`)
	wantNotSent(t, url, se, code, time.Since(start))
	if !strings.Contains(se, "no connection to chiod within the connect timeout") {
		t.Fatalf("stderr does not name the connect timeout:\n%s", se)
	}
}

// A TCP connect that never completes is given up after the connect
// timeout, and the call was not sent.
func TestCallStalledTCPConnectIsNotSent(t *testing.T) {
	url := stalledConnectURL(t)
	start := time.Now()
	_, se, code := chio(inflightAgent(t, url), "call", "--connect-timeout", "150ms", "demo", "echo", "--args", `{}`)
	wantNotSent(t, url, se, code, time.Since(start))
}

// A signal while the TLS handshake is stalled stops chio call before any
// attempt had a connection: it says nothing was sent, with no request id
// to await. The listener signals this process as it accepts the TCP
// connection, so the signal meets the handshake.
func TestCallInterruptedDuringTLSHandshakeSaysNothingWasSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
				t.Error(err)
			}
		}
	}()
	so, se, code := chio(inflightAgent(t, "https://"+ln.Addr().String()), "call", "demo", "echo", "--args", `{}`)
	if code != cli.ExitInterrupted || so != "" || strings.Contains(se, "may have") || strings.Contains(se, "request id:") ||
		!strings.Contains(se, "chio: interrupted (SIGINT) before the call was sent: this run sent nothing to chiod") {
		t.Fatalf("exit %d (want %d), stdout %q, stderr:\n%s", code, cli.ExitInterrupted, so, se)
	}
}
