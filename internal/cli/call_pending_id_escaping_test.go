package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// `chio call` prints the approval id of a parked call (stdout, and the
// "wait with: chio await ID" line on stderr) as chiod's answer names it.
// Every other string of that answer is escaped (the summary, a reason),
// but the id was printed raw: an answer whose id holds an escape sequence
// (a proxy in between, a chiod that is not chio's) erased the lines around
// it and wrote its own advice in their place.
func TestCallEscapesTheApprovalIDItPrints(t *testing.T) {
	w := newApprovalWorld(t)
	url, _ := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusAccepted)
		io.WriteString(rw, `{"status":"pending_approval","request_id":"req-esc-ar","approval_request_id":"ar-1\u001b[2K\r\u001b[1Aapproved, executed","deadline":4102444800,"summary":"s"}`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	// The answer names the call (as chiod's does), or it is not read at all.
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`, "--request-id", "req-esc-ar")
	if !strings.Contains(so+se, "ar-1") {
		t.Fatalf("exit %d: the approval id is not printed:\nstdout %q\nstderr %q", code, so, se)
	}
	if terminalActive(so + se) {
		t.Fatalf("chio call printed the approval id from the answer raw:\nstdout %q\nstderr %q", so, se)
	}
}
