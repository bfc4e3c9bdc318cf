package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chiod answers a parked call with the approval id to await. A "pending"
// answer without one is not chiod's: exit 3 would hand the script an empty
// id to await and keep from it the request id it never saw (chio call made
// it up), so that the call, which may have run, could be neither awaited
// nor retried. chio call must treat it as an unknown answer: exit 1,
// naming the request id.
func TestCallPendingWithoutApprovalIDNamesTheRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusAccepted)
		io.WriteString(rw, `{"status":"pending_approval","deadline":4102444800,"summary":"s"}`)
	})
	env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
	sent := ids()
	if len(sent) != 1 || code == cli.ExitOK || code == cli.ExitPending || code == cli.ExitDenied ||
		!strings.Contains(se, "request id: "+sent[0]) {
		t.Fatalf("exit %d, sent %q\nstdout %q\nstderr %q", code, sent, so, se)
	}
}
