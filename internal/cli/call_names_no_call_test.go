package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chiod's answer to a call always names it (request_id). One that names
// no call (a proxy or cache serving some other request's answer) says
// nothing of this one, which may have run: as the SDKs
// (testdata/sdk/call_outcomes.json), chio call must exit 1 naming the
// request id it sent, never print the answer's output as this call's
// (exit 0) nor its denial (exit 4: did not run, safe to send again).
func TestCallAnswerNamingNoCallIsNotAnOutcome(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
	}{
		{http.StatusOK, `{"status":"allowed","receipt_id":"rc-1","output":{"refund":"re_99"}}`},
		{http.StatusForbidden, `{"status":"denied","receipt_id":"rc-1","reason":"no","guard":"g"}`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(c.status)
			io.WriteString(rw, c.body)
		}))
		t.Cleanup(srv.Close)
		so, se, code := chio(inflightAgent(t, srv.URL), "call", "pay", "issue_refund", "--args", `{}`, "--request-id", "req-no-name")
		if code != cli.ExitError || !strings.Contains(se, "request id: req-no-name") || !strings.Contains(se, "may have run") {
			t.Fatalf("%d %s: exit %d, want 1 naming request req-no-name as possibly run\nstdout %q\nstderr %q", c.status, c.body, code, so, se)
		}
	}
}
