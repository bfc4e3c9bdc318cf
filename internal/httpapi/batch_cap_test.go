package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
)

// An approver past kernel.MaxLiveBatchesPerApprover live standing
// approvals gets a 409 that says why, and nothing is stored.
func TestStandingApprovalCapIsAConflict(t *testing.T) {
	f := newApprovalsFixture(t)
	create := func() (int, map[string]any) {
		b := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: keyAlice.Public().String(),
			Audience: f.k.PublicKey().String(), ServerPattern: "pay", ToolPattern: "ref*", NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
		raw, err := b.Sign(keyAlice)
		if err != nil {
			t.Fatal(err)
		}
		return f.do(t, "POST", "/approvals/batch", `{"token":`+string(json.RawMessage(raw))+`}`, nil)
	}
	for i := range kernel.MaxLiveBatchesPerApprover {
		if status, m := create(); status != 201 {
			t.Fatalf("batch %d: %d %v", i+1, status, m)
		}
	}
	status, m := create()
	if msg, _ := m["message"].(string); status != 409 || m["error"] != "conflict" || !strings.Contains(msg, "live standing approvals") {
		t.Fatalf("batch %d: %d %v, want 409 conflict saying why", kernel.MaxLiveBatchesPerApprover+1, status, m)
	}
	if _, m := f.do(t, "GET", "/approvals/batch", "", withBearer(approvalsReader)); m["count"] != float64(kernel.MaxLiveBatchesPerApprover) {
		t.Fatalf("after the refusal: %v batches listed", m["count"])
	}
}
