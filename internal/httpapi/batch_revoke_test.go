package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// A standing approval's id is chosen by its signer, and the way to end it
// early is DELETE /approvals/batch/{id}, which refuses ids longer than
// MaxIDLen and never sees "." or ".." (the router redirects them away). A
// batch with such an id, once stored, could not be revoked through the
// path and would keep approving calls with no human for up to 30 days. So
// the kernel refuses it at creation (approval.ValidID), and nothing is
// stored. `chio approval batch revoke ID` sends url.PathEscape(ID).
func TestBatchWithIDThePathCannotCarryIsRefused(t *testing.T) {
	for _, id := range []string{strings.Repeat("b", 200), "..", ".", "a/b", "ba-1?x", "ba 1", "ba-\r\x1b[2K"} {
		t.Run(url.PathEscape(id)[:min(len(url.PathEscape(id)), 12)], func(t *testing.T) {
			f := newApprovalsFixture(t)
			raw := signBatch(t, f, id)
			status, m := f.do(t, "POST", "/approvals/batch", `{"token":`+string(raw)+`}`, nil)
			if status != 400 || m["error"] != "bad_request" || !strings.Contains(m["message"].(string), approval.IDRule) {
				t.Fatalf("batch with id %q: got %d %v, want 400 bad_request naming the id rule", id, status, m)
			}
			if _, m := f.do(t, "GET", "/approvals/batch", "", withBearer(approvalsAdmin)); m["count"] != 0.0 {
				t.Fatalf("a refused batch was stored: %v", m)
			}
			if out := f.pendingRefund(t); out.Status != kernel.StatusPendingApproval {
				t.Fatalf("%+v", out)
			}
		})
	}
}

// The longest id the rule allows is created and revoked through the path.
func TestBatchWithLongestValidIDIsRevokedThroughThePath(t *testing.T) {
	f := newApprovalsFixture(t)
	id := "ba-" + strings.Repeat("x", approval.MaxIDLen-5) + ".:"
	if status, m := f.do(t, "POST", "/approvals/batch", `{"token":`+string(signBatch(t, f, id))+`}`, nil); status != 201 {
		t.Fatalf("create: %d %v", status, m)
	}
	if status, m := f.do(t, "DELETE", "/approvals/batch/"+url.PathEscape(id), "", withBearer(approvalsAdmin)); status != 200 {
		t.Fatalf("revoke: %d %v", status, m)
	}
	f.pendingRefund(t)
}

// A batch stored before ids were checked may have one the path cannot
// carry; DELETE /approvals/batch?id=ID revokes it, and it then covers
// nothing. The mux must not redirect the request elsewhere.
func TestBatchStoredWithOddIDIsRevokedByQuery(t *testing.T) {
	for _, id := range []string{strings.Repeat("b", 200), "..", ".", "a/b", "ba-\r\x1b[2K"} {
		t.Run(url.PathEscape(id)[:min(len(url.PathEscape(id)), 12)], func(t *testing.T) {
			f := newApprovalsFixture(t)
			storeLegacyBatch(t, f, id)
			refund := func() *kernel.Outcome {
				return f.submit(t, keyAgent, "refund", `{"amount":450,"currency":"USD"}`, `{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`)
			}
			if out := refund(); out.Status != kernel.StatusAllowed {
				t.Fatalf("the stored batch should cover a refund before it is revoked: %+v", out)
			}
			path := "/approvals/batch?" + url.Values{"id": {id}}.Encode()
			for _, c := range []struct {
				hdr    map[string]string
				status int
			}{{withBearer(approvalsReader), 401}, {nil, 401}, {withBearer(approvalsAdmin), 200}} {
				req, _ := http.NewRequest("DELETE", f.srv.URL+path, nil)
				for k, v := range c.hdr {
					req.Header.Set(k, v)
				}
				client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.status {
					t.Fatalf("DELETE %s: got %d, want %d", path, resp.StatusCode, c.status)
				}
			}
			if out := refund(); out.Status == kernel.StatusAllowed {
				t.Fatalf("a revoked batch still approves calls with no human: %+v", out)
			}
		})
	}
}

// The query form names exactly one id; anything else is a bad request
// that revokes nothing, and an unknown id is not found.
func TestBatchRevokeByQueryRefusesBadQueries(t *testing.T) {
	f := newApprovalsFixture(t)
	storeLegacyBatch(t, f, "..")
	for _, c := range []struct {
		query  string
		status int
	}{
		{"", 400}, {"id=", 400}, {"id=..&id=..", 400}, {"id=..&x=1", 400}, {"id=%zz", 400},
		{"id=ba-nope", 404}, {"id=" + strings.Repeat("b", approval.MaxTokenBytes+1), 404},
	} {
		if status, m := f.do(t, "DELETE", "/approvals/batch?"+c.query, "", withBearer(approvalsAdmin)); status != c.status {
			t.Fatalf("?%.20s: got %d %v, want %d", c.query, status, m, c.status)
		}
	}
	if _, m := f.do(t, "GET", "/approvals/batch", "", withBearer(approvalsAdmin)); m["batches"].([]any)[0].(map[string]any)["revoked"] != false {
		t.Fatalf("a refused revoke changed the batch: %v", m)
	}
}

// signBatch is Alice's standing approval for 100 refunds with id.
func signBatch(t *testing.T, f *approvalsFixture, id string) []byte {
	t.Helper()
	calls := int64(100)
	b := &approval.BatchToken{Schema: approval.BatchSchema, ID: id, Approver: keyAlice.Public().String(),
		Audience: f.k.PublicKey().String(), ServerPattern: "pay", ToolPattern: "refund", MaxCalls: &calls,
		NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(24 * time.Hour).Unix()}
	raw, err := b.Sign(keyAlice)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// storeLegacyBatch writes signBatch(id) straight to the store, as a chiod
// that did not yet check batch ids would have.
func storeLegacyBatch(t *testing.T, f *approvalsFixture, id string) {
	t.Helper()
	raw := signBatch(t, f, id)
	var tok approval.BatchToken
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	err := f.w.Store.Update(context.Background(), func(tx kernel.Tx) error {
		return tx.PutBatch(&approval.Batch{Token: &tok, Raw: raw, CreatedAt: f.clock.Now().UnixMilli()})
	})
	if err != nil {
		t.Fatal(err)
	}
}
