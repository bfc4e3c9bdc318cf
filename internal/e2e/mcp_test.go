package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/mcptest"
	"github.com/chiokernel/chio/kernel"
)

// mcpWorld is a real chiod in front of two real upstream MCP servers (the
// reference server and chio's node test peer, both over stdio), an agent
// with a capability, and an approver.
type mcpWorld struct {
	d        *daemon
	dir      string
	capFile  string
	keyFile  string
	apprFile string
}

func mcpPolicy(t *testing.T, dir string, approver keys.PublicKey) string {
	q := func(argv []string) string {
		b, _ := json.Marshal(argv)
		return string(b)
	}
	return fmt.Sprintf(`
[[servers]]
id = "everything"
transport = "mcp"
command = %s

[[servers]]
id = "peer"
transport = "mcp"
command = %s
timeout_seconds = 20

[[grants]]
id = "echo"
server = "everything"
tool = "echo"
[grants.constraints]
forbidden_paths = ["/etc/**"]

[[grants]]
id = "transfer"
server = "peer"
tool = "transfer"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
channels = ["poll"]
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Approver"

[[grants]]
id = "peer-misc"
server = "peer"
tool = "[dm]*"
`, q(mcptest.EverythingStdio(t)), q(mcptest.PeerStdio(t)), approver)
}

func startMCPWorld(t *testing.T) *mcpWorld {
	t.Helper()
	mcptest.Require(t)
	dir := t.TempDir()
	appr, _ := keys.Generate(nil)
	w := &mcpWorld{dir: dir, apprFile: filepath.Join(dir, "approver.pem"), keyFile: filepath.Join(dir, "agent.pem"),
		capFile: filepath.Join(dir, "agent.cap")}
	if err := keys.WritePrivateKey(w.apprFile, appr); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "chio.toml")
	if err := os.WriteFile(cfg, []byte(mcpPolicy(t, dir, appr.Public())), 0o600); err != nil {
		t.Fatal(err)
	}
	w.d = startDaemon(t, cfg, filepath.Join(dir, "data"))
	// chiod serves at once; the upstreams connect in the background.
	mcptest.Eventually(t, 60*time.Second, "both MCP servers to connect", func() bool {
		return strings.Count(w.d.log(), `"mcp server connected"`) >= 2
	})
	a := newAgent(t, w.d, "echo", "transfer", "peer-misc")
	if err := keys.WritePrivateKey(w.keyFile, a.key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.capFile, a.capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// connect runs `chio mcp serve` as a go-sdk client's stdio server, as a
// desktop MCP client would launch it.
func (w *mcpWorld) connect(t *testing.T, wait string, progress *atomic.Int32) (*mcpsdk.ClientSession, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "chio"), "mcp", "serve", "--url", w.d.url,
		"--capability", w.capFile, "--key", w.keyFile, "--pending-wait", wait)
	cmd.Stderr = os.Stderr
	opts := &mcpsdk.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(context.Context, *mcpsdk.ProgressNotificationClientRequest) { progress.Add(1) }
	}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "go-sdk-test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, cmd
}

func call(t *testing.T, cs *mcpsdk.ClientSession, name string, args any, progress bool) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := &mcpsdk.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken("tok-" + name)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(r *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func meta(r *mcpsdk.CallToolResult, k string) string {
	s, _ := r.Meta["chio/"+k].(string)
	return s
}

// The go-sdk client through the bridge: list, allow, deny, schema refusal,
// pending → approve → await, pending → deny, and the receipts.
func TestMCPGoClient(t *testing.T) {
	w := startMCPWorld(t)
	var progress atomic.Int32
	cs, _ := w.connect(t, "1s", &progress)

	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == "everything__echo" && !strings.Contains(fmt.Sprint(tool.InputSchema), "message") {
			t.Errorf("echo's upstream schema was not passed on: %v", tool.InputSchema)
		}
	}
	sort.Strings(names)
	// get-sum and the peer's other tools are not granted: not listed.
	want := "chio_await everything__echo peer__die peer__meta peer__transfer"
	if strings.Join(names, " ") != want {
		t.Fatalf("tools = %v, want %s", names, want)
	}

	r := call(t, cs, "everything__echo", map[string]any{"message": "hello"}, false)
	if r.IsError || text(r) != "Echo: hello" {
		t.Fatalf("allow: %+v %q", r, text(r))
	}
	r = call(t, cs, "everything__echo", map[string]any{"message": "/etc/passwd"}, false)
	if !r.IsError || meta(r, "status") != "denied" || meta(r, "guard") != "forbidden_paths" || !strings.HasPrefix(meta(r, "receipt_id"), "rc-") {
		t.Fatalf("deny: %v %q", r.Meta, text(r))
	}
	denyReceipt := meta(r, "receipt_id")
	r = call(t, cs, "everything__echo", map[string]any{"message": 42}, false)
	if !r.IsError || meta(r, "status") != "refused" || !strings.Contains(text(r), "inputSchema") {
		t.Fatalf("schema: %v %q", r.Meta, text(r))
	}

	// Pending, then approved with the CLI; chio_await returns the tool's result.
	r = call(t, cs, "peer__transfer", map[string]any{"amount": 5, "to": "bob"}, true)
	id := meta(r, "approval_id")
	if !r.IsError || meta(r, "status") != "pending_approval" || !strings.HasPrefix(id, "ar-") || r.Meta["chio/deadline"] == nil ||
		!strings.Contains(text(r), id) || !strings.Contains(text(r), "chio_await") {
		t.Fatalf("pending: %v %q", r.Meta, text(r))
	}
	if progress.Load() == 0 {
		t.Error("no progress notifications while parked")
	}
	if out, errOut, code := w.d.chio(t, w.dir, "approval", "approve", id, "--key", w.apprFile); code != 0 {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	r = call(t, cs, "chio_await", map[string]any{"id": id}, false)
	if r.IsError || text(r) != "transferred 5 to bob" {
		t.Fatalf("await approved: %v %q", r.Meta, text(r))
	}

	// Pending, then denied.
	r = call(t, cs, "peer__transfer", map[string]any{"amount": 9, "to": "mallory"}, false)
	id2 := meta(r, "approval_id")
	if _, errOut, code := w.d.chio(t, w.dir, "approval", "deny", id2, "--key", w.apprFile, "--reason", "not mallory"); code != 0 {
		t.Fatalf("deny: %s", errOut)
	}
	r = call(t, cs, "chio_await", map[string]any{"id": id2}, false)
	if !r.IsError || meta(r, "status") != "denied" || meta(r, "guard") != "human-approval" {
		t.Fatalf("await denied: %v %q", r.Meta, text(r))
	}

	// Receipts name the chio server id.
	var rc struct {
		ToolServer string `json:"tool_server"`
		ToolName   string `json:"tool_name"`
	}
	if code := w.d.do(t, "GET", "/v1/receipts/"+denyReceipt, nil, &rc); code != 200 || rc.ToolServer != "everything" || rc.ToolName != "echo" {
		t.Fatalf("receipt %d %+v", code, rc)
	}
}

// An agent whose client disconnects while its call is parked: the call
// stays parked, is approved later, and a new session fetches the outcome.
func TestMCPDisconnectWhileParked(t *testing.T) {
	w := startMCPWorld(t)
	cs, cmd := w.connect(t, "60s", nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "peer__transfer", Arguments: map[string]any{"amount": 3, "to": "dave"}})
	}()
	var pending struct {
		Approvals []struct {
			ApprovalID string `json:"approval_id"`
		} `json:"approvals"`
	}
	mcptest.Eventually(t, 30*time.Second, "the call to park", func() bool {
		w.d.do(t, "GET", "/approvals/pending", nil, &pending)
		return len(pending.Approvals) == 1
	})
	cmd.Process.Kill() // the client's bridge goes away mid-wait
	<-done
	id := pending.Approvals[0].ApprovalID
	time.Sleep(200 * time.Millisecond)
	w.d.do(t, "GET", "/approvals/pending", nil, &pending)
	if len(pending.Approvals) != 1 {
		t.Fatal("the parked call did not stay parked")
	}
	if _, errOut, code := w.d.chio(t, w.dir, "approval", "approve", id, "--key", w.apprFile); code != 0 {
		t.Fatal(errOut)
	}
	cs2, _ := w.connect(t, "1s", nil)
	r := call(t, cs2, "chio_await", map[string]any{"id": id, "wait_seconds": 30}, false)
	if r.IsError || text(r) != "transferred 3 to dave" {
		t.Fatalf("await after reconnect: %v %q", r.Meta, text(r))
	}
	// Another agent cannot read it.
	other := newAgent(t, w.d, "echo")
	w2 := *w
	w2.keyFile, w2.capFile = filepath.Join(w.dir, "other.pem"), filepath.Join(w.dir, "other.cap")
	keys.WritePrivateKey(w2.keyFile, other.key)
	os.WriteFile(w2.capFile, other.capRaw, 0o600)
	cs3, _ := w2.connect(t, "1s", nil)
	if r := call(t, cs3, "chio_await", map[string]any{"id": id}, false); !r.IsError || meta(r, "status") != "refused" {
		t.Fatalf("other agent's await: %v %q", r.Meta, text(r))
	}
}

// The upstream crashes during a call: the call ends as a tool failure (not
// retried into a second run), chiod restarts the server, calls work again.
func TestMCPUpstreamCrash(t *testing.T) {
	w := startMCPWorld(t)
	cs, _ := w.connect(t, "1s", nil)
	r := call(t, cs, "peer__die", map[string]any{}, false)
	if !r.IsError || r.Meta["chio/execution"] != "unknown" {
		t.Fatalf("die: %v %q", r.Meta, text(r))
	}
	// The call that kills its server is re-sent at most
	// kernel.MaxMaybeReachedAttempts times in all (it was re-sent at every
	// reconnect for the whole retry deadline, killing the peer 7 times in
	// 30 s and leaving it down for up to 30 s more), and the peer is up
	// again soon after.
	deaths := func() int {
		return strings.Count(w.d.log(), `"mcp server down; restarting" mcp_server=peer`)
	}
	peerUp := func() bool {
		log := w.d.log()
		return strings.LastIndex(log, `"mcp server connected" mcp_server=peer`) > strings.LastIndex(log, `"mcp server down; restarting" mcp_server=peer`)
	}
	mcptest.Eventually(t, 60*time.Second, "the peer to be restarted", func() bool {
		return deaths() >= kernel.MaxMaybeReachedAttempts && peerUp()
	})
	r = call(t, cs, "peer__meta", map[string]any{}, false)
	if r.IsError || !strings.Contains(text(r), `"chio/idempotency_key":"mcp-`) {
		t.Fatalf("after restart: %v %q", r.Meta, text(r))
	}
	if n := deaths(); n != kernel.MaxMaybeReachedAttempts {
		t.Fatalf("the peer died %d times, want %d:\n%s", n, kernel.MaxMaybeReachedAttempts, w.d.log())
	}
}

// The TypeScript SDK client, launching `chio mcp serve` as a desktop client.
func TestMCPTypeScriptClient(t *testing.T) {
	w := startMCPWorld(t)
	node, dir := mcptest.Require(t)
	cmd := exec.Command(node, filepath.Join(dir, "ts-client.mjs"), filepath.Join(binDir, "chio"), w.d.url, w.capFile, w.keyFile)
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	steps := map[string]json.RawMessage{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Step  string          `json:"step"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		steps[s.Step] = s.Value
		if s.Step == "pending" {
			var p struct {
				Result   mcpsdk.CallToolResult `json:"result"`
				Progress int                   `json:"progress"`
			}
			json.Unmarshal(s.Value, &p)
			id, _ := p.Result.Meta["chio/approval_id"].(string)
			if !p.Result.IsError || !strings.HasPrefix(id, "ar-") || p.Progress == 0 {
				t.Fatalf("pending (ts): %s", s.Value)
			}
			if _, errOut, code := w.d.chio(t, w.dir, "approval", "approve", id, "--key", w.apprFile); code != 0 {
				t.Fatal(errOut)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ts client: %v (steps %v)", err, steps)
	}
	checks := map[string]string{
		"list":  `"name":"everything__echo"`,
		"allow": `"text":"Echo: from typescript"`,
		"deny":  `"chio/guard":"forbidden_paths"`,
		"await": `"text":"transferred 7 to carol"`,
	}
	for step, want := range checks {
		if !strings.Contains(string(steps[step]), want) {
			t.Errorf("%s = %s, want %s", step, steps[step], want)
		}
	}
	if strings.Contains(string(steps["list"]), "get-sum") {
		t.Errorf("ungranted tool listed: %s", steps["list"])
	}
}
