package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/testkit"
)

// `chio receipt list --still-pending` works when the log holds a failed
// call. A tool failure's `incomplete` receipt (kernel/deliver.go) has no
// approval_request_id; reading it with MetaString(nil) gives "null", not
// "", and the CLI used to ask chiod for GET /approvals/null, get 404, and
// refuse to answer ("reading approval status"). Without the flag the table
// showed STATUS "?" and warned for receipts that are not suspensions at all.
func TestStillPendingSkipsIncompleteReceiptsWithoutApprovalRequest(t *testing.T) {
	tool := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(rw, "no such account")
	}))
	defer tool.Close()
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(failingToolPolicy, tool.URL), Grants: []string{"lookup"},
		Serve: true, AdminToken: approvalAdminToken})
	w.Submit(t, "lookup", `{"account":"x"}`, "")
	env := map[string]string{"CHIO_URL": w.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "list", "--still-pending")
	if code != 0 {
		t.Fatalf("receipt list --still-pending fails on a log holding a failed call: %d\n%s%s", code, so, se)
	}
	so, se, code = chio(env, "receipt", "list", "--decision", "incomplete")
	if code != 0 || strings.Contains(se, "cannot read approval status") || strings.Contains(so, " ? ") {
		t.Fatalf("receipt list looks up an approval for a tool failure's receipt: %d\n%s%s", code, so, se)
	}
}
