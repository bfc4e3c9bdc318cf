package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// chiod's answer to a call can come just as the MCP client goes away:
// the bridge's write of it to stdout fails (or the session is already
// closing and the SDK drops it unwritten). The call ran or was decided,
// yet neither the agent nor the log kept its request id: chio mcp serve
// must say on stderr which call's answer it could not deliver.
func TestMCPServeNamesACallWhoseAnswerCouldNotBeWritten(t *testing.T) {
	r, parked := mcpServeParkedConfirm(t, "lost-answer-test")
	r.closeStdout() // the client stops reading; stdin stays open
	if _, err := r.w.Kernel.Cancel(context.Background(), parked.ApprovalID, "the operator withdrew it", kernel.CancelledByAdmin); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(r.stderr(), parked.RequestID); {
		if time.Now().After(deadline) {
			t.Fatalf("chiod answered call %s but its answer could not be written to the client, and chio mcp serve's "+
				"stderr does not name it: nobody keeps a record that it was decided. stderr: %q", parked.RequestID, r.stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mcpServeParkedConfirm starts chio mcp serve with a confirm tool one
// approver decides, initializes a session as client, calls it and waits
// until chiod has parked the call; it returns the run and the request.
func mcpServeParkedConfirm(t *testing.T, client string) (*mcpServeRun, *approval.Request) {
	t.Helper()
	approver, _ := keys.Generate(nil)
	r := mcpServe(t, fmt.Sprintf(`
[[servers]]
id = "demo"
transport = "builtin"

[[grants]]
id = "confirm"
server = "demo"
tool = "confirm"
[grants.approval]
channels = ["poll"]
[[grants.approval.approvers]]
public_key = %q
display_name = "Approver"
`, approver.Public()), []string{"confirm"}, "--pending-wait", "5m")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + client + `","version":"1"}}}`)
	if a := nextAnswer(t, r.out, r.exited, r.stderr, "initialize"); a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__confirm","arguments":{"prompt":"Ship it?"}}}`)
	var parked []*approval.Request
	deadline := time.Now().Add(30 * time.Second)
	for len(parked) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		var err error
		if parked, err = r.w.Kernel.ListPending(kernel.PendingFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	if len(parked) != 1 {
		t.Fatalf("the call was not parked: %d pending (stderr %q)", len(parked), r.stderr())
	}
	return r, parked[0]
}
