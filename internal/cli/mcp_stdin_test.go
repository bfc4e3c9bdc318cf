package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/dispatch/mcp"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcpgw"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// echoPolicy: the builtin demo server, its echo tool granted as "echo".
const echoPolicy = `
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "echo"
server = "demo"
tool = "echo"
`

// mcpServeAgent runs `chio mcp serve` over pipes against a chiod serving
// /mcp with the builtin demo server, its agent granted echo. It returns a
// function writing one line to the bridge's stdin, the channel of the
// lines it writes to stdout, and the channel of its exit code.
func mcpServeAgent(t *testing.T) (send func(string), out <-chan string, exited chan int, stderr func() string) {
	t.Helper()
	b := mcpServe(t, echoPolicy, []string{"echo"})
	return b.send, b.out, b.exited, b.stderr
}

// mcpServeRun is a `chio mcp serve` running over pipes (mcpServe).
type mcpServeRun struct {
	w          *testkit.World
	send       func(string)
	closeStdin func()
	// closeStdout closes the read end of the bridge's stdout: its next
	// write fails, as to a client that went away.
	closeStdout func()
	out         <-chan string
	exited      chan int
	stderr      func() string
}

// mcpServe runs `chio mcp serve` (with args) over pipes against a chiod
// serving /mcp under policyText, its agent granted grants.
func mcpServe(t *testing.T, policyText string, grants []string, args ...string) *mcpServeRun {
	t.Helper()
	p, err := policy.Parse([]byte(policyText), "mcpstdin.toml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := dispatch.New(p.Servers, t.TempDir(), dispatch.WithMCP(mcp.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { router.Close() })
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: router, Grants: grants, Serve: true,
		BeforeServe: func(tw *testkit.World) {
			g, err := mcpgw.New(mcpgw.Options{Kernel: tw.Kernel, Catalog: router.MCP()})
			if err != nil {
				t.Fatal(err)
			}
			tw.API.Handle(mcpgw.Path, g)
		}})
	dir := t.TempDir()
	keyFile, capFile := filepath.Join(dir, "agent.pem"), filepath.Join(dir, "agent.cap")
	if err := keys.WritePrivateKey(keyFile, w.Agent); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(capFile, w.CapRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var se syncBuffer
	code := make(chan int, 1) // holds the exit code once it exited, for every reader
	go func() {
		c := cli.Main(append([]string{"mcp", "serve", "--url", w.URL, "--capability", capFile, "--key", keyFile}, args...),
			&cli.Env{Stdin: inR, Stdout: outW, Stderr: &se, Getenv: func(string) string { return "" }})
		outW.Close()
		code <- c
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case c := <-code:
			code <- c
		case <-time.After(30 * time.Second):
			t.Error("chio mcp serve did not end when its stdin closed")
		}
	})
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(line string) {
		go inW.Write([]byte(line + "\n")) // a bridge that stopped reading must not hang the test
	}
	return &mcpServeRun{w: w, send: send, closeStdin: func() { inW.Close() }, closeStdout: func() { outR.Close() },
		out: lines, exited: code, stderr: se.String}
}

// syncBuffer is a bytes.Buffer the bridge and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rpcAnswer is a JSON-RPC response as the bridge wrote it.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// nextAnswer reads the bridge's next response (skipping notifications).
func nextAnswer(t *testing.T, out <-chan string, exited chan int, stderr func() string, after string) rpcAnswer {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-out:
			if !ok {
				code := <-exited
				exited <- code
				t.Fatalf("after %s: chio mcp serve closed stdout (exit %d, stderr %q): the agent's later calls all fail",
					after, code, stderr())
			}
			var a rpcAnswer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("after %s: stdout line is not a JSON-RPC message: %q", after, line)
			}
			if a.ID == nil && a.Error == nil {
				continue // a notification
			}
			return a
		case <-timeout:
			t.Fatalf("after %s: no answer from chio mcp serve within 30s (stderr %q)", after, stderr())
		}
	}
}

// An agent's MCP client, or anything else writing to `chio mcp serve`'s
// stdin, may send a line that is not a JSON-RPC message. The MCP SDK's
// stdio transport ended the whole session on the first one (not JSON, a
// wrong "jsonrpc" tag, an id that is an object, a bare value, an empty
// batch, a batch in a protocol version without batches, trailing data):
// chio mcp serve exited and every later call of the agent failed. A
// JSON-RPC server answers a parse error (-32700) or an invalid request
// (-32600) and goes on serving.
func TestMCPServeAnswersMalformedLinesAndKeepsServing(t *testing.T) {
	send, out, exited, stderr := mcpServeAgent(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdin-test","version":"1"}}}`)
	if a := nextAnswer(t, out, exited, stderr, "initialize"); a.Error != nil || string(a.ID) != "1" {
		t.Fatalf("initialize: %+v", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	for i, tc := range []struct {
		line   string
		code   int
		wantID string // the id the answer carries: null when none can be read
	}{
		{`this is not json`, -32700, "null"},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700, "null"},
		{`{"jsonrpc":"2.0","id":5,"method":"ping"} {"jsonrpc":"2.0","id":6,"method":"ping"}`, -32700, "null"},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, "null"},
		{`{"jsonrpc":"2.0","result":{}}`, -32600, "null"},
		{`"ping"`, -32600, "null"},
		{`null`, -32600, "null"},
		{`[]`, -32600, "null"},
		{`[1]`, -32600, "null"},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, "null"}, // no batches since 2025-06-18
	} {
		send(tc.line)
		what := fmt.Sprintf("the line %q", tc.line)
		a := nextAnswer(t, out, exited, stderr, what)
		if a.Error == nil || a.Error.Code != tc.code || string(a.ID) != tc.wantID {
			t.Fatalf("%s: answered %s %+v, want error %d with id %s", what, a.ID, a.Error, tc.code, tc.wantID)
		}
		ping := 100 + i
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, ping))
		if a := nextAnswer(t, out, exited, stderr, what+" then a ping"); a.Error != nil || string(a.ID) != fmt.Sprint(ping) {
			t.Fatalf("%s: the next ping was answered %s %+v", what, a.ID, a.Error)
		}
	}
	send(`{"jsonrpc":"2.0","id":200,"method":"tools/call","params":{"name":"demo__echo","arguments":{"hello":"world"}}}`)
	a := nextAnswer(t, out, exited, stderr, "the malformed lines, a tools/call")
	if a.Error != nil || string(a.ID) != "200" || !strings.Contains(string(a.Result), "world") {
		t.Fatalf("the call after the malformed lines: %s %+v %s", a.ID, a.Error, a.Result)
	}
}

// An MCP client that closes stdin while a call of its agent is parked
// (or running) ends `chio mcp serve`. The call stands — chio decided it
// durably, and an approver may yet let it run — but only the bridge knew
// its request id: the agent never got an answer naming it, so neither a
// new session's chio_await nor `chio await` could find its outcome. The
// bridge must say, where its client's log keeps it (stderr), which call
// it left behind and how to await it.
func TestMCPServeClosedMidCallNamesTheCallLeftBehind(t *testing.T) {
	r, parked := mcpServeParkedConfirm(t, "stdin-test")
	r.closeStdin() // the client goes away while chiod holds the call open
	select {
	case code := <-r.exited:
		r.exited <- code
		if code != cli.ExitOK {
			t.Fatalf("chio mcp serve exited %d when its client closed stdin (stderr %q)", code, r.stderr())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("chio mcp serve did not end when its client closed stdin mid-call")
	}
	rec, err := r.w.Kernel.Call(parked.RequestID)
	if err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("the parked call did not stand: %+v %v", rec, err)
	}
	if se := r.stderr(); !strings.Contains(se, parked.RequestID) {
		t.Fatalf("the client went away mid-call and chio mcp serve ended without naming the call it left behind "+
			"(request %s, approval %s): its outcome cannot be found by the agent. stderr: %q",
			parked.RequestID, parked.ApprovalID, se)
	}
}

// A call whose arguments are over chio's bound is refused, as chiod
// refuses it (a result saying so: nothing was decided, nothing ran),
// however large: one too large for /mcp's request bound met chiod's 413
// instead, which the bridge passed on as a transport error, then as "may
// have reached chio, do not call it again".
func TestMCPServeRefusesArgumentsOverTheBound(t *testing.T) {
	send, out, exited, stderr := mcpServeAgent(t)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stdin-test","version":"1"}}}`)
	nextAnswer(t, out, exited, stderr, "initialize")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	for i, n := range []int{kernel.MaxArgumentsBytes, mcpgw.MaxRequestBytes} {
		id := fmt.Sprint(2 + i)
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"demo__echo","arguments":{"a":"` +
			strings.Repeat("x", n) + `"}}}`)
		a := nextAnswer(t, out, exited, stderr, fmt.Sprintf("a call with %d bytes of arguments", n))
		var r struct {
			IsError bool           `json:"isError"`
			Meta    map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(a.Result, &r)
		if a.Error != nil || string(a.ID) != id || !r.IsError || r.Meta[mcpgw.MetaStatus] != mcpgw.StatusRefused ||
			!strings.Contains(fmt.Sprint(r.Meta[mcpgw.MetaReason]), "arguments larger than") {
			t.Fatalf("a call with %d bytes of arguments: answered %+v %v, want a %q result (arguments larger than …)",
				n, a.Error, r.Meta, mcpgw.StatusRefused)
		}
	}
}
