package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// chiod pages a listing by next_cursor, the seq of the last receipt of
// the page, and sets it only when receipts are left. A page with no
// receipt that still names a next_cursor was followed as it was, page
// after page: a chiod (or anything between) answering such pages kept
// `chio receipt list` asking for up to its 5-minute limit, then
// "context deadline exceeded". Such a page is refused at once.
func TestReceiptListRefusesAnEmptyPageThatGoesOn(t *testing.T) {
	approver := keys.FromSeed(bytes.Repeat([]byte{29}, 32))
	tw := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditCLIPolicy, approver.Public()), PolicyName: "audit.toml",
		Grants: []string{"echo", "refunds"}, Serve: true, AdminToken: "admin", ReadToken: "reader"})
	out := tw.SubmitCall(t, tw.CallAs(t, tw.Agent, tw.CapRaw, "demo", "echo", `{"x":1}`, ""))
	if out.Status != kernel.StatusAllowed {
		t.Fatalf("the call: %+v", out)
	}
	// The first 20 pages are empty, each naming a cursor to go on from;
	// then chiod's own answer passes (so the test ends either way).
	var pages atomic.Int32
	url := forgingProxy(t, tw.URL, func(path string, body []byte) []byte {
		if path == "/v1/receipts" && pages.Add(1) <= 20 {
			return []byte(`{"receipts":[],"count":0,"next_cursor":"0"}`)
		}
		return body
	})
	stdout, stderr, code := chioVia(url, "receipt", "list", "--output", "jsonl")
	if code != 1 || stdout != "" || !strings.Contains(stderr, "next_cursor") {
		t.Fatalf("receipt list through empty pages that go on: exit %d after %d pages, want 1 at the first, naming next_cursor, nothing listed\n%s%s",
			code, pages.Load(), stdout, stderr)
	}
}
