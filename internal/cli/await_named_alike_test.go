package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chio await reads a call's state as chio call reads its answer and as the
// SDKs do (testdata/sdk/call_outcomes.json): one that can be read two ways
// — a denial beside a "Status" saying allowed, which Go's encoding/json
// took for an allow, or a status named twice — is not chiod's, never the
// call's outcome (exit 0 printing an output, or exit 4 "denied: did not
// run").
func TestAwaitRefusesAStateReadTwoWays(t *testing.T) {
	for name, body := range map[string]string{
		"Status beside status": `{"status":"denied","request_id":"req-1","reason":"no","guard":"g","receipt_id":"rc-1","Status":"allowed","output":{"refund":"re_99"}}`,
		"status twice":         `{"status":"denied","request_id":"req-1","reason":"no","guard":"g","receipt_id":"rc-1","status":"allowed","output":{"refund":"re_99"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Content-Type", "application/json")
				io.WriteString(rw, body)
			}))
			defer front.Close()
			env := map[string]string{"CHIO_ADMIN_TOKEN": "t", "CHIO_URL": front.URL}
			so, se, code := chio(env, "await", "req-1", "--timeout", "2s")
			if code != cli.ExitError || strings.Contains(so, "re_99") {
				t.Fatalf("exit %d (want %d), stdout %q\nstderr %q", code, cli.ExitError, so, se)
			}
		})
	}
}
