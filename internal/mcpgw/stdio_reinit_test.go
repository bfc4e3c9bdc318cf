package mcpgw

import (
	"strings"
	"testing"
)

// The stdio filter lets batches through only in a session whose protocol
// version takes them (before 2025-06-18), and learnt that version from
// every initialize line, also one the SDK refuses as a second
// initialize. A client that initialized at 2025-06-18, then sent an
// initialize asking for 2025-03-26 (refused), had its next batch passed
// to the SDK, which ended the whole session on it: every later call of
// the agent failed. The session's version is its first initialize's.
func TestStdioSecondInitializeDoesNotLetBatchesEndTheSession(t *testing.T) {
	send := stdioSession(t, "2025-06-18")
	if got := send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-03-26",` +
		`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); !strings.Contains(got, `"error"`) {
		t.Fatalf("a second initialize was answered %q", got)
	}
	if got := send(`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`); !invalidRequestNullID(got) {
		t.Errorf("a batch in a 2025-06-18 session was answered %q, want an invalid request with id null", got)
	}
	if got := send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`); got != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Errorf("a ping after the batch was answered %q", got)
	}
}
