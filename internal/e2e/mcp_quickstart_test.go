package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPQuickStart follows docs/mcp.md's "Try it with the quick start"
// with the real binaries: chiod on examples/policies/quickstart.toml (the
// builtin demo tools, no MCP server), the README's agent, and a go-sdk
// client launching `chio mcp serve`. The demo tools the capability grants
// are offered and answer through the kernel: allowed, denied, and parked
// for a human, then approved and fetched with chio_await; a refund carries
// the governed intent the client declared in _meta.
func TestMCPQuickStart(t *testing.T) {
	work := t.TempDir()
	root := repoRoot()
	d := startDaemon(t, filepath.Join(root, "examples", "policies", "quickstart.toml"), filepath.Join(work, "data"))
	pub, _, code := d.chio(t, work, "keygen", "--out", "agent.pem")
	if code != 0 {
		t.Fatalf("keygen: %d", code)
	}
	if _, errOut, code := d.chio(t, work, "capability", "issue", "--subject", pub, "--grant", "echo", "--grant", "refunds",
		"--grant", "files", "--grant", "confirm", "--ttl", "1h", "--out", "agent.cap"); code != 0 {
		t.Fatalf("capability issue: %d %s", code, errOut)
	}
	cmd := exec.Command(filepath.Join(binDir, "chio"), "mcp", "serve", "--url", d.url,
		"--capability", filepath.Join(work, "agent.cap"), "--key", filepath.Join(work, "agent.pem"), "--pending-wait", "1s")
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "quickstart", Version: "1"}, nil).Connect(ctx, &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "chio_await demo__confirm demo__delete_file demo__echo demo__issue_refund"; got != want {
		t.Fatalf("tools = %s, want %s", got, want)
	}

	r := call(t, cs, "demo__echo", map[string]any{"hello": "world"}, false)
	if r.IsError || text(r) != `{"echo":{"hello":"world"}}` {
		t.Fatalf("echo: %v %q", r.Meta, text(r))
	}
	r = call(t, cs, "demo__delete_file", map[string]any{"path": "/etc/passwd"}, false)
	if !r.IsError || meta(r, "status") != "denied" || meta(r, "guard") != "forbidden_paths" {
		t.Fatalf("delete: %v %q", r.Meta, text(r))
	}
	// The refunds grant requires a governed intent: a call without one (all
	// a chat client can make) is denied, the tool not run.
	r = call(t, cs, "demo__issue_refund", map[string]any{"customer_id": "cust-9012", "amount": 450, "currency": "USD"}, false)
	if !r.IsError || meta(r, "status") != "denied" || meta(r, "guard") != "governed_intent_required" {
		t.Fatalf("refund: %v %q", r.Meta, text(r))
	}
	// An agent on an MCP SDK declares it in _meta, as docs/mcp.md shows:
	// over the grant's 200 USD threshold the refund is parked, then
	// approved and issued; over the intent's own max_amount it is denied.
	refund := func(maxUnits int) *mcpsdk.CallToolResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{
			Name:      "demo__issue_refund",
			Arguments: map[string]any{"customer_id": "cust-9012", "amount": 450, "currency": "USD"},
			Meta: mcpsdk.Meta{"chio/governed_intent": map[string]any{
				"purpose":    "Refund order #8834",
				"max_amount": map[string]any{"units": maxUnits, "currency": "USD"},
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r = refund(100)
	if !r.IsError || meta(r, "status") != "denied" || meta(r, "guard") != "intent_envelope" {
		t.Fatalf("refund over its max_amount: %v %q", r.Meta, text(r))
	}
	r = refund(500)
	refundID := meta(r, "approval_id")
	if !r.IsError || meta(r, "status") != "pending_approval" || !strings.HasPrefix(refundID, "ar-") {
		t.Fatalf("refund with an intent: %v %q", r.Meta, text(r))
	}
	if out, errOut, code := d.chio(t, work, "approval", "approve", refundID, "--key", filepath.Join(root, "examples", "keys", "finance-lead.pem")); code != 0 {
		t.Fatalf("approve refund: %d %s %s", code, out, errOut)
	}
	r = call(t, cs, "chio_await", map[string]any{"id": refundID}, false)
	if r.IsError || !strings.HasPrefix(text(r), `{"refund_id":"rf-`) || !strings.Contains(text(r), `"status":"issued"`) {
		t.Fatalf("await refund: %v %q", r.Meta, text(r))
	}
	r = call(t, cs, "demo__confirm", map[string]any{"prompt": "Ship the release?"}, false)
	id := meta(r, "approval_id")
	if !r.IsError || meta(r, "status") != "pending_approval" || !strings.HasPrefix(id, "ar-") {
		t.Fatalf("confirm: %v %q", r.Meta, text(r))
	}
	if out, errOut, code := d.chio(t, work, "approval", "approve", id, "--key", filepath.Join(root, "examples", "keys", "finance-lead.pem")); code != 0 {
		t.Fatalf("approve: %d %s %s", code, out, errOut)
	}
	r = call(t, cs, "chio_await", map[string]any{"id": id}, false)
	if r.IsError || !strings.HasPrefix(text(r), `{"approver":"ed25519:`) || !strings.HasSuffix(text(r), `","confirmed":true}`) {
		t.Fatalf("await: %v %q", r.Meta, text(r))
	}
}
