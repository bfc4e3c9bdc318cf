package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

// A route that takes no query refuses one, before it does anything: it
// used to answer as if the query were not there. GET /v1/export?since=24h
// or ?decision=deny answered the whole log (and signed a checkpoint first);
// GET /v1/receipts/{id}/proof?size=3 a proof against a new checkpoint, not
// the one at size 3; GET /approvals/stream?approver=… every approver's
// events. An auditor's script believed it had what it asked for.
func TestRoutesWithoutQueryRefuseOne(t *testing.T) {
	f := newAuditFixture(t)
	f.populate(t)
	pending := f.call(t, "refund")
	code, body := f.get(t, "/v1/receipts?order=desc&limit=1", "reader")
	var page httpapi.ReceiptPage
	if code != http.StatusOK || json.Unmarshal(body, &page) != nil || page.Count != 1 {
		t.Fatalf("list: %d %s", code, body)
	}
	var newest struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(page.Receipts[0], &newest); err != nil || newest.ID == "" {
		t.Fatalf("receipt id of %s: %v", page.Receipts[0], err)
	}
	before, _, beforeErr := f.log.Latest()

	for _, c := range []struct{ path, want string }{
		{"/v1/export?decision=deny", `"decision"`},
		{"/v1/export?since=24h", `"since"`},
		{"/v1/receipts/" + newest.ID + "/proof?size=3", `"size"`},
		{"/v1/receipts/" + newest.ID + "?format=json", `"format"`},
		{"/approvals/" + pending.ApprovalRequestID + "?approver=ed25519:x", `"approver"`},
		{"/approvals/stream?approver=ed25519:x", `"approver"`},
		{"/v1/export?%zz", "malformed"},
	} {
		code, body := getWithin(t, f.srv.URL+c.path, "reader")
		var e struct{ Error, Message string }
		_ = json.Unmarshal(body, &e)
		if code != http.StatusBadRequest || e.Error != "bad_request" || !strings.Contains(e.Message, c.want) ||
			!strings.Contains(e.Message, "takes no query parameters") && !strings.Contains(c.want, "malformed") {
			t.Errorf("GET %s: %d %.300s; want 400 bad_request naming %s", c.path, code, body, c.want)
		}
	}
	// Nothing was done for them: no checkpoint was signed.
	after, _, afterErr := f.log.Latest()
	if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
		t.Errorf("a refused request signed a checkpoint: latest was %s (%v), is %s (%v)", before, beforeErr, after, afterErr)
	}
	// Without a query they answer.
	for _, path := range []string{"/v1/receipts/" + newest.ID, "/v1/receipts/" + newest.ID + "/proof", "/approvals/" + pending.ApprovalRequestID} {
		if code, body := f.get(t, path, "reader"); code != http.StatusOK {
			t.Errorf("GET %s: %d %s; want 200", path, code, body)
		}
	}
}

// getWithin is a GET with the reader token that gives up after a few
// seconds: a stream opened where a refusal was due never ends by itself.
func getWithin(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
