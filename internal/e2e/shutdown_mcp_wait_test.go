//go:build unix

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chiokernel/chio/internal/mcptest"
)

// TestShutdownAnswersAnMCPClientWaitingOnAParkedCall: chiod's shutdown
// ends REST long-polls and event streams at once (their clients get the
// state as it is), but an MCP tools/call held open on a call parked for a
// human (chio/wait_seconds, here five minutes) did not watch it: SIGTERM
// waited out the whole grace period for it, then stopped the kernel and
// exited 1 ("requests were still running"), as if a tool were stuck. The
// wait now ends with the shutdown: the client is answered pending_approval
// (the call stays parked, fetched later with chio_await) and chiod exits 0.
func TestShutdownAnswersAnMCPClientWaitingOnAParkedCall(t *testing.T) {
	w := startMCPWorld(t)
	cs, _ := w.connect(t, "300s", nil)
	got := make(chan *mcpsdk.CallToolResult, 1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "peer__transfer", Arguments: map[string]any{"amount": 4, "to": "erin"}})
		if err != nil {
			errc <- err
			return
		}
		got <- r
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
	stopBySIGTERM(t, w.d)
	if code := w.d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("chiod exited %d after SIGTERM with only an MCP client waiting on a parked call; want 0 (nothing was running)\n%s", code, w.d.log())
	}
	select {
	case r := <-got:
		if meta(r, "status") != "pending_approval" || meta(r, "approval_id") != pending.Approvals[0].ApprovalID ||
			!strings.Contains(text(r), "chio_await") {
			t.Fatalf("the waiting client was answered %v %q; want pending_approval for %s, naming chio_await", r.Meta, text(r), pending.Approvals[0].ApprovalID)
		}
	case err := <-errc:
		t.Fatalf("the waiting client's call failed instead of being answered pending: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the waiting client was never answered")
	}
}
