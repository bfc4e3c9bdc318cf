package mcp

import (
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/policy"
)

// Why a Streamable HTTP upstream is down becomes a refused call's
// tool_error (signed, kept in the receipt log, shown to the agent and to
// every reader) and a line of chiod's log. Its URL may carry a credential
// (a key in the query, a password in the userinfo), so neither may repeat
// it: they say what failed.
func TestDownReasonDoesNotRepeatTheURL(t *testing.T) {
	const secret = "s3cret-mcp-key"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more: connection refused
	var log lockedBuffer
	o := fastOptions()
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	s, err := NewSet([]policy.Server{{ID: "web", Transport: policy.TransportMCP,
		URL: "http://chio:" + secret + "@" + addr + "/mcp?key=" + secret}}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var msg string
	mcptest.Eventually(t, 30*time.Second, "a failed connection", func() bool {
		_, err := dispatch(s, "req-1", "web", "echo", `{}`)
		msg = err.Error()
		return strings.Contains(msg, "refused")
	})
	if strings.Contains(msg, secret) {
		t.Errorf("the delivery error repeats the MCP server's credential: %s", msg)
	}
	if l := log.String(); strings.Contains(l, secret) {
		t.Errorf("chiod's log repeats the MCP server's credential: %s", l)
	}
}
