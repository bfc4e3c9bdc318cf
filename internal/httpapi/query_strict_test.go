package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
)

// An auditor's script that misspells a filter, repeats one or mangles its
// escape must be told so: answering with the unfiltered list would count
// every receipt as a deny.
func TestListQueriesRefuseWhatTheyWouldIgnore(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t) // 3 allows, an approved refund, a denied one

	for _, c := range []struct{ path, want string }{
		{"/v1/receipts?decison=deny", `"decison"`},
		{"/v1/receipts?decision=deny&decision=allow", `"decision" given 2 times`},
		{"/v1/receipts?decision=%zz", "malformed"},
		{"/v1/receipts?tool=refund;decision=deny", "malformed"},
		{"/v1/receipts/stats?group-by=decision", `"group-by"`},
		{"/v1/receipts/stats?guard=human-approval&guard=scope", `"guard" given 2 times`},
		{"/approvals/pending?subject=ed25519:x", `"subject"`},
		{"/v1/checkpoints/consistency?from=1&to=2&too=3", `"too"`},
		{"/v1/checkpoints?size=1&sizee=2", `"sizee"`},
		{"/v1/checkpoints/latest?size=3", `"size" (this route takes no query parameters)`}, // takes nothing: not the checkpoint at 3
	} {
		code, body := f.get(t, c.path, "reader")
		var e struct{ Error, Message string }
		_ = json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Error != "bad_request" || !strings.Contains(e.Message, c.want) {
			t.Errorf("GET %s: %d %s; want 400 bad_request naming %s", c.path, code, body, c.want)
		}
	}

	// What the CLI, the SDKs and the dashboard send still works, and the
	// filter a correct query names is applied.
	for _, c := range []struct {
		path string
		n    int
	}{
		{"/v1/receipts?decision=deny", 1},
		{"/v1/receipts?meta=approval_request_id&order=desc&limit=100", 4}, // 2 incomplete, 1 allow, 1 deny
		{"/v1/receipts?meta=approval_request_id&meta=approver", 2},
		{"/v1/receipts?decision=allow&tool=echo&since=24h&limit=10", 3},
	} {
		code, body := f.get(t, c.path, "reader")
		var page httpapi.ReceiptPage
		if err := json.Unmarshal(body, &page); code != http.StatusOK || err != nil || page.Count != c.n {
			t.Errorf("GET %s: %d, %d receipts (%s); want 200 with %d", c.path, code, page.Count, body, c.n)
		}
	}
	for _, path := range []string{"/v1/checkpoints/latest", "/v1/receipts/stats?decision=deny&group_by=guard", "/approvals/pending?limit=1000&subject_id=ed25519:x&tool_server=pay&tool_name=refund"} {
		if code, body := f.get(t, path, "reader"); code != http.StatusOK {
			t.Errorf("GET %s: %d %s; want 200", path, code, body)
		}
	}
}
