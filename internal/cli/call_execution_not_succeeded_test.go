package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// An allowed call whose execution is not "succeeded" has no result, tool
// error or not: the SDKs' Allowed.Failed (Go), failed (Python, TypeScript)
// say so for any execution but "succeeded", and one this client does not
// know counts too, never a success whose output is used. chio call and
// chio await must exit 6 and say what became of it — not exit 0 with the
// output as a success: "unknown" may have run and must not be sent again
// under a new request id.
func TestCallAndAwaitReadAnExecutionOtherThanSucceededAsNoResult(t *testing.T) {
	for _, c := range []struct {
		execution, says string
	}{
		{"unknown", "its outcome is unknown"},
		{"not_delivered", "not delivered"},
		{"tool_error", "the tool failed"},
		{"resumed_elsewhere", "allowed, but"}, // one this CLI does not know
	} {
		answer := `{"status":"allowed","request_id":"req-exec-1","receipt_id":"rc-1","output":{"refund":"re_99"},"execution":"` + c.execution + `"}`
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			io.WriteString(rw, answer)
		}))
		t.Cleanup(srv.Close)
		env := inflightAgent(t, srv.URL)
		for _, args := range [][]string{
			{"call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-exec-1"},
			{"await", "req-exec-1", "--timeout", "5s"},
		} {
			so, se, code := chio(env, args...)
			if code != cli.ExitToolFailed || !strings.Contains(se, c.says) {
				t.Errorf("%s, execution %q: exit %d, want %d saying %q\nstdout %q\nstderr %q", args[0], c.execution, code, cli.ExitToolFailed, c.says, so, se)
			}
		}
	}
}
