package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A POST route took any query and ignored it: POST /v1/calls?wait=60
// answered at once with the call parked (the script believed it had
// waited), /approvals/{id}/cancel?reason=… cancelled with the body's reason.
// Each POST (and the session's and a batch revoke's other methods) now
// refuses a query before it does anything, as the reading routes do
// (query.go).
func TestPostRoutesRefuseAQuery(t *testing.T) {
	f := newAuditFixture(t)
	pending := f.call(t, "refund")
	post := func(path, token string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", f.srv.URL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	refused := func(path, token string, body any, want string) {
		t.Helper()
		code, out := post(path, token, body)
		var e struct{ Error, Message string }
		_ = json.Unmarshal([]byte(out), &e)
		if code != http.StatusBadRequest || e.Error != "bad_request" || !strings.Contains(e.Message, want) {
			t.Errorf("POST %s: %d %.300s; want 400 bad_request naming %s", path, code, out, want)
		}
	}

	call := f.w.Call(t, "echo", `{"n":1}`, "")
	refused("/v1/calls?wait=60", "", call, `"wait"`)
	if _, err := f.k.Call(call.RequestID); !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("a call posted with a refused query was recorded (%v)", err)
	}
	vote := f.w.Token(t, pending.ApprovalRequestID, auditApprover, approval.DecisionApproved, nil)
	refused("/approvals/"+pending.ApprovalRequestID+"/respond?decision=denied", "", map[string]any{"token": json.RawMessage(vote)}, `"decision"`)
	refused("/approvals/"+pending.ApprovalRequestID+"/cancel?reason=x", "admin", map[string]string{"reason": "wrong account"}, `"reason"`)
	if req, err := f.k.Approval(pending.ApprovalRequestID); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Errorf("after refused POSTs the request is %+v (%v); want pending with no vote", req, err)
	}
	refused("/approvals/batch/respond?x=1", "", map[string]any{}, `"x"`)
	refused("/approvals/batch?dry_run=1", "", map[string]any{}, `"dry_run"`)
	refused("/v1/capabilities?ttl=1h", "admin", map[string]any{}, `"ttl"`)
	refused("/v1/capabilities/cap-x/revoke?now=1", "admin", map[string]any{}, `"now"`)
	refused("/v1/session?x", "", map[string]any{}, `"x"`)
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/approvals/batch/b-1?force=1"}, {"GET", "/v1/session/challenge?x=1"},
		{"GET", "/v1/session?x=1"}, {"DELETE", "/v1/session?x=1"},
	} {
		req, _ := http.NewRequest(c.method, f.srv.URL+c.path, nil)
		req.Header.Set("Authorization", "Bearer admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "takes no query parameters") {
			t.Errorf("%s %s: %d %.200s; want 400 refusing the query", c.method, c.path, resp.StatusCode, out)
		}
	}

	// Without the query the same call and vote go through.
	if code, out := post("/v1/calls", "", call); code != http.StatusOK {
		t.Errorf("POST /v1/calls: %d %s; want 200", code, out)
	}
	if code, out := post("/approvals/"+pending.ApprovalRequestID+"/respond", "", map[string]any{"token": json.RawMessage(vote)}); code != http.StatusOK {
		t.Errorf("respond: %d %s; want 200", code, out)
	}
}
