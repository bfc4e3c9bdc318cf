package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Grouped by approver, `chio receipt stats` asks chiod twice (the counts,
// then the auto-approvals alone) and subtracts: each answer is a
// consistent cut, but of two moments. An auto-approval committed between
// them was in the second and not the first: the kernel's group showed
// more auto-approvals than `total` counted, exit 0, figures that do not
// add up. The figures shown must be of one snapshot.
func TestReceiptStatsAutoApprovedSplitIsOfOneSnapshot(t *testing.T) {
	lead, _ := keys.Generate(nil)
	fake := clock.NewFake(time.Now())
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(autoPolicy, lead.Public()), Clock: fake,
		Grants: []string{"refunds"}, Serve: true, AdminToken: approvalAdminToken})
	human := w.Submit(t, "echo", `{"n":1}`, "")
	if _, err := w.Kernel.Respond(context.Background(), human.ApprovalRequestID, w.Token(t, human.ApprovalRequestID, lead, approval.DecisionApproved, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	autoApprove := func(req string) {
		fake.Advance(61 * time.Second)
		for deadline := time.Now().Add(20 * time.Second); ; {
			if rec, _ := w.Kernel.Call(req); rec != nil && rec.Status == kernel.StatusAllowed {
				return
			}
			if time.Now().After(deadline) {
				t.Error("no auto-approval")
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	autoApprove(w.Submit(t, "echo", `{"n":2}`, "").RequestID)
	late := w.Submit(t, "echo", `{"n":3}`, "") // parked; its deadline passes between the two questions
	// chiod itself, reached through a proxy that, before forwarding the
	// second stats question, lets the deadline of the parked call pass and
	// waits for the kernel to auto-approve it.
	target, _ := url.Parse(w.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var stats atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/receipts/stats" && stats.Add(1) == 2 {
			autoApprove(late.RequestID)
		}
		rp.ServeHTTP(rw, r)
	}))
	defer proxy.Close()
	env := map[string]string{"CHIO_URL": proxy.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "stats", "--decision", "allow", "--group-by", "metadata.approver_display_name", "--output", "json")
	var out struct {
		Total        uint64 `json:"total"`
		Groups       []struct{ Count uint64 }
		AutoApproved []struct{ Count uint64 } `json:"auto_approved"`
	}
	if code != 0 || json.Unmarshal([]byte(so), &out) != nil {
		t.Fatalf("stats: exit %d\n%s%s", code, so, se)
	}
	sum := uint64(0)
	for _, g := range append(out.Groups, out.AutoApproved...) {
		sum += g.Count
	}
	if sum != out.Total {
		t.Fatalf("stats: the groups and auto-approvals count %d receipts, total says %d: not one snapshot\n%s", sum, out.Total, so)
	}
}

// Other receipts committed while it counts (a busy kernel: calls parked,
// allowed, denied) do not change what the kernel auto-approved: the split
// stays one snapshot without asking again, and never gives up for them.
func TestReceiptStatsSplitOnABusyLog(t *testing.T) {
	lead, _ := keys.Generate(nil)
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(autoPolicy, lead.Public()),
		Grants: []string{"refunds"}, Serve: true, AdminToken: approvalAdminToken})
	target, _ := url.Parse(w.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var n atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/receipts/stats" {
			w.Submit(t, "echo", fmt.Sprintf(`{"n":%d}`, n.Add(1)), "") // one more call parked before each question
		}
		rp.ServeHTTP(rw, r)
	}))
	defer proxy.Close()
	env := map[string]string{"CHIO_URL": proxy.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "stats", "--group-by", "metadata.approver_display_name", "--output", "json")
	if code != 0 {
		t.Fatalf("stats on a busy log: exit %d after %d questions\n%s%s", code, n.Load(), so, se)
	}
}
