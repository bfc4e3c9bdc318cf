package cli_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chiod answers a call 200, 202 or 403, never another 2xx. Another
// success status comes from something in between that says the request
// went through — a transforming proxy's 203 for chiod's 200 (the call
// ran), a 204 — so the call may have run: chio call must exit non-zero
// AND name the request id it sent, as for a lost answer, so that the
// script resumes it rather than running the step again under a new id.
func TestCallOtherSuccessStatusNamesTheRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	for _, c := range []struct {
		code int
		body string
	}{
		{http.StatusNonAuthoritativeInfo, `{"status":"allowed","output":{"paid":true}}`},
		{http.StatusCreated, `{"status":"allowed","output":{"paid":true}}`},
		{http.StatusNoContent, ``},
	} {
		url, ids := fakeFront(t, func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(c.code)
			io.WriteString(rw, c.body)
		})
		env := map[string]string{"CHIO_URL": url, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": w.capFile(t)}
		so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"x"}`)
		sent := ids()
		if len(sent) == 0 || code == cli.ExitOK || code == cli.ExitDenied || !strings.Contains(se, "request id: "+sent[0]) {
			t.Fatalf("%d %s: exit %d, sent %q\nstdout %q\nstderr %q", c.code, c.body, code, sent, so, se)
		}
	}
}
