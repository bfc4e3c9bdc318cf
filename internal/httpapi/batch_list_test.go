package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
)

// GET /approvals/batch answers a page at a time (limit, after), like the
// other lists: every batch ever created is kept, so one answer holding
// them all would grow without bound.
func TestStandingApprovalsListPages(t *testing.T) {
	f := newApprovalsFixture(t)
	ids := []string{"ba-a", "ba-b", "ba-c"}
	for _, id := range ids {
		b := &approval.BatchToken{Schema: approval.BatchSchema, ID: id, Approver: keyAlice.Public().String(),
			Audience: f.k.PublicKey().String(), ServerPattern: "pay", ToolPattern: "ref*", NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
		raw, err := b.Sign(keyAlice)
		if err != nil {
			t.Fatal(err)
		}
		if status, m := f.do(t, "POST", "/approvals/batch", `{"token":`+string(raw)+`}`, nil); status != 201 {
			t.Fatalf("%d %v", status, m)
		}
	}
	page := func(query string) (int, []string, any) {
		status, m := f.do(t, "GET", "/approvals/batch"+query, "", withBearer(approvalsReader))
		var got []string
		list, _ := m["batches"].([]any)
		for _, b := range list {
			raw, _ := json.Marshal(b.(map[string]any)["token"])
			var tok approval.BatchToken
			json.Unmarshal(raw, &tok)
			got = append(got, tok.ID)
		}
		return status, got, m["next_after"]
	}
	if status, got, next := page("?limit=2"); status != 200 || len(got) != 2 || got[0] != "ba-a" || got[1] != "ba-b" || next != "ba-b" {
		t.Fatalf("first page: %d %v next %v, want [ba-a ba-b] next ba-b", status, got, next)
	}
	if status, got, next := page("?limit=2&after=ba-b"); status != 200 || len(got) != 1 || got[0] != "ba-c" || next != nil {
		t.Fatalf("last page: %d %v next %v, want [ba-c] and no next", status, got, next)
	}
	if status, got, _ := page(""); status != 200 || len(got) != 3 {
		t.Fatalf("default page: %d %v", status, got)
	}
	for _, q := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=1", "?after=a&after=b", "?after=%00", "?after=%ff"} {
		if status, m := f.do(t, "GET", "/approvals/batch"+q, "", withBearer(approvalsReader)); status != 400 || m["error"] != "bad_request" {
			t.Errorf("GET /approvals/batch%s: %d %v, want 400 bad_request", q, status, m)
		}
	}
}
