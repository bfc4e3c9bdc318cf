package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

func fastOptions() Options {
	return Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, CallTimeout: 20 * time.Second}
}

func startSet(t *testing.T, o Options, servers ...policy.Server) *Set {
	t.Helper()
	for i := range servers {
		servers[i].Transport = policy.TransportMCP
	}
	s, err := NewSet(servers, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, srv := range servers {
		u, _ := s.Upstream(srv.ID)
		mcptest.Eventually(t, 60*time.Second, srv.ID+" to connect", u.Ready)
	}
	return s
}

func dispatch(s *Set, id, server, tool, args string) (kernel.DispatchResult, error) {
	return s.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: id, Server: server, Tool: tool,
		Arguments: json.RawMessage(args), Attempt: 1})
}

func mustText(t *testing.T, out json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a CallToolResult with content: %s (%v)", out, err)
	}
	return r.Content[0].Text
}

// lockedBuffer is a log destination the upstreams' goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The reference server over stdio and over Streamable HTTP: discovery with
// schemas, validation, a call, a tool error, an unknown tool. Every tool it
// lists is offered (none is refused by the schema checks).
func TestEverything(t *testing.T) {
	web := mcptest.StartEverythingHTTP(t, 0)
	var log lockedBuffer
	o := fastOptions()
	o.Log = slog.New(slog.NewTextHandler(&log, nil))
	t.Cleanup(func() {
		if strings.Contains(log.String(), "tool not offered") {
			t.Errorf("a reference server tool was left out:\n%s", log.String())
		}
	})
	s := startSet(t, o,
		policy.Server{ID: "stdio", Command: mcptest.EverythingStdio(t)},
		policy.Server{ID: "web", URL: web.URL})
	for _, srv := range []string{"stdio", "web"} {
		t.Run(srv, func(t *testing.T) {
			u, _ := s.Upstream(srv)
			echo, ok := u.Tool("echo")
			if !ok || len(u.Tools()) < 5 {
				t.Fatalf("tools: %d, echo %v", len(u.Tools()), ok)
			}
			if !strings.Contains(string(echo.InputSchema), `"message"`) || echo.Description == "" {
				t.Fatalf("echo schema %s / %q", echo.InputSchema, echo.Description)
			}
			for args, valid := range map[string]bool{`{"message":"hi"}`: true, `{"message":1}`: false, `{}`: false, `[]`: false} {
				if err := s.ValidateArguments(srv, "echo", json.RawMessage(args)); (err == nil) != valid {
					t.Errorf("validate %s: %v", args, err)
				}
			}
			if err := s.ValidateArguments(srv, "nope", json.RawMessage(`{}`)); err == nil {
				t.Error("unknown tool validated")
			}
			res, err := dispatch(s, "req-echo-"+srv, srv, "echo", `{"message":"hi"}`)
			if err != nil || res.ToolError != "" || mustText(t, res.Output) != "Echo: hi" {
				t.Fatalf("echo = %s / %q / %v", res.Output, res.ToolError, err)
			}
			// Bypassing validation, the server itself refuses bad input.
			res, err = dispatch(s, "req-bad-"+srv, srv, "get-sum", `{"a":"x","b":2}`)
			if err != nil || res.ToolError == "" {
				t.Fatalf("bad get-sum = %s / %q / %v", res.Output, res.ToolError, err)
			}
			res, err = dispatch(s, "req-unknown-"+srv, srv, "no-such-tool", `{}`)
			if err != nil || res.ToolError == "" {
				t.Fatalf("unknown tool = %s / %q / %v", res.Output, res.ToolError, err)
			}
		})
	}
}

// The recorded output is the upstream's bytes, members MCP does not define
// included; the request id reaches the server in _meta; elicitation and
// sampling are refused; list_changed refreshes the catalogue.
func TestPeerProtocol(t *testing.T) {
	var mu sync.Mutex
	changed := 0
	o := fastOptions()
	o.OnToolsChanged = func(string) { mu.Lock(); changed++; mu.Unlock() }
	s := startSet(t, o, policy.Server{ID: "peer", Command: mcptest.PeerStdio(t)})

	res, err := dispatch(s, "req-raw", "peer", "raw", `{}`)
	if err != nil || !strings.Contains(string(res.Output), `"zExtra":{"b":1,"a":[true,null]}`) {
		t.Fatalf("raw = %s / %v", res.Output, err)
	}
	res, _ = dispatch(s, "req-meta", "peer", "meta", `{}`)
	var meta map[string]any
	if err := json.Unmarshal([]byte(mustText(t, res.Output)), &meta); err != nil || meta[MetaIdempotencyKey] != "req-meta" || meta[MetaAttempt] != 1.0 {
		t.Fatalf("meta = %s (%v)", mustText(t, res.Output), err)
	}
	for _, tool := range []string{"elicit", "sample"} {
		res, err = dispatch(s, "req-"+tool, "peer", tool, `{}`)
		if err != nil || !strings.Contains(res.ToolError, "refused") {
			t.Fatalf("%s = %s / %q / %v", tool, res.Output, res.ToolError, err)
		}
	}
	if _, ok := s.Tool("peer", "added"); ok {
		t.Fatal("added before grow")
	}
	mu.Lock()
	before := changed
	mu.Unlock()
	if _, err := dispatch(s, "req-grow", "peer", "grow", `{}`); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, 10*time.Second, "list_changed refresh", func() bool { _, ok := s.Tool("peer", "added"); return ok })
	mu.Lock()
	defer mu.Unlock()
	if changed <= before {
		t.Fatal("OnToolsChanged not called")
	}
}

// A tool whose inputSchema applies a recursive subschema twice per level
// of the arguments (the peer's "nest") would cost 2^depth to validate:
// arguments nested 40 deep would keep a goroutine of chiod busy for days.
// It is left out of the catalogue, so it can be neither offered nor
// validated against; the peer's other tools are catalogued.
func TestPeerToolWhoseValidationBlowsUpIsLeftOut(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "peer", Command: mcptest.PeerStdio(t)})
	if _, ok := s.Tool("peer", "transfer"); !ok {
		t.Fatal("transfer is not catalogued")
	}
	if _, ok := s.Tool("peer", "nest"); ok {
		t.Fatal("nest is catalogued; validating 40-deep arguments against it would take 2^40 steps")
	}
	if err := s.ValidateArguments("peer", "nest", json.RawMessage(strings.Repeat(`{"a":`, 40)+"{}"+strings.Repeat("}", 40))); err == nil {
		t.Fatal("arguments for nest validated")
	}
}

// A crashed stdio server is restarted; while it is down calls are
// NotDelivered; a crash during a call is retryable with delivery unknown.
func TestStdioCrashRestart(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "peer", Command: mcptest.PeerStdio(t)})
	u, _ := s.Upstream("peer")

	_, err := dispatch(s, "req-die", "peer", "die", `{}`)
	var de *kernel.DeliveryError
	if !errors.As(err, &de) || de.NotDelivered || !de.Retryable {
		t.Fatalf("mid-call crash: %v (%+v)", err, de)
	}
	mcptest.Eventually(t, 30*time.Second, "restart", func() bool { return u.Starts() >= 2 && u.Ready() })

	// Kill it from outside and call at once: not delivered.
	pid := u.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	mcptest.Eventually(t, 10*time.Second, "crash noticed", func() bool { return !u.Ready() || u.PID() != pid })
	if !u.Ready() {
		_, err = dispatch(s, "req-down", "peer", "meta", `{}`)
		if !errors.As(err, &de) || !de.NotDelivered || !de.Retryable {
			t.Fatalf("down: %v", err)
		}
	}
	mcptest.Eventually(t, 30*time.Second, "second restart", func() bool { return u.Starts() >= 3 && u.Ready() })
	if res, err := dispatch(s, "req-after", "peer", "meta", `{}`); err != nil || res.ToolError != "" {
		t.Fatalf("after restart: %v %q", err, res.ToolError)
	}
}

// A Streamable HTTP server that goes away and comes back on the same port
// is reconnected; calls in between are retryable failures.
func TestHTTPReconnect(t *testing.T) {
	web := mcptest.StartEverythingHTTP(t, 0)
	s := startSet(t, fastOptions(), policy.Server{ID: "web", URL: web.URL})
	u, _ := s.Upstream("web")
	web.Stop()
	res0, err := dispatch(s, "req-gone", "web", "echo", `{"message":"x"}`)
	var de *kernel.DeliveryError
	// Refused (not delivered) or, if a pooled connection died under the
	// request, unknown: either way retryable.
	if !errors.As(err, &de) || !de.Retryable {
		t.Fatalf("server gone: %v %s %q", err, res0.Output, res0.ToolError)
	}
	mcptest.StartEverythingHTTP(t, web.Port)
	mcptest.Eventually(t, 60*time.Second, "reconnect", func() bool { return u.Starts() >= 2 && u.Ready() })
	if res, err := dispatch(s, "req-back", "web", "echo", `{"message":"back"}`); err != nil || mustText(t, res.Output) != "Echo: back" {
		t.Fatalf("after reconnect: %v %s", err, res.Output)
	}
}

func TestNotConnected(t *testing.T) {
	o := fastOptions()
	s, err := NewSet([]policy.Server{{ID: "gone", Transport: policy.TransportMCP, Command: []string{"/nonexistent/mcp-server"}}}, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = dispatch(s, "req-1", "gone", "x", `{}`)
	var de *kernel.DeliveryError
	if !errors.As(err, &de) || !de.NotDelivered || !de.Retryable {
		t.Fatalf("not started: %v", err)
	}
	if err := s.ValidateArguments("gone", "x", json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "not listed its tools") {
		t.Fatalf("validate before listing: %v", err)
	}
}

func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "CHIO_ADMIN_TOKEN=secret", "SLACK_BOT_TOKEN=x", "LC_ALL=C", "npm_config_cache=/c", "HOME=/h"})
	if strings.Join(got, " ") != "PATH=/bin LC_ALL=C npm_config_cache=/c HOME=/h" {
		t.Fatalf("env = %q", got)
	}
}
