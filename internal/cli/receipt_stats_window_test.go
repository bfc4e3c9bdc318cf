package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Grouped by approver, `chio receipt stats` asks chiod twice: the stats,
// then the auto-approved receipts alone, which it takes out of the
// people's groups. A --since given as a duration was sent as such both
// times, so chiod counted it back from its clock twice: time passing
// between the two answers moved the second window, and the kernel's own
// auto-approvals, outside it, were left among the people as an approver,
// with the whole timeout as a person's latency. The second question must
// be asked for the window the first was answered for.
func TestReceiptStatsAutoApprovedSplitKeepsTheWindow(t *testing.T) {
	lead, _ := keys.Generate(nil)
	fake := clock.NewFake(time.Now())
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(autoPolicy, lead.Public()), Clock: fake,
		Grants: []string{"refunds"}, Serve: true, AdminToken: approvalAdminToken})
	human := w.Submit(t, "echo", `{"n":1}`, "")
	if _, err := w.Kernel.Respond(context.Background(), human.ApprovalRequestID, w.Token(t, human.ApprovalRequestID, lead, approval.DecisionApproved, nil), "", ""); err != nil {
		t.Fatal(err)
	}
	auto := w.Submit(t, "echo", `{"n":2}`, "")
	fake.Advance(61 * time.Second)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if rec, _ := w.Kernel.Call(auto.RequestID); rec != nil && rec.Status == kernel.StatusAllowed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no auto-approval")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// chiod itself, reached through a proxy that lets ten minutes pass on
	// chiod's clock once it has answered the first stats question: what a
	// slow answer, or a window edge, does in a moment.
	target, _ := url.Parse(w.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var once sync.Once
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(rw, r)
		if r.URL.Path == "/v1/receipts/stats" {
			once.Do(func() { fake.Advance(10 * time.Minute) })
		}
	}))
	defer proxy.Close()
	env := map[string]string{"CHIO_URL": proxy.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}
	so, se, code := chio(env, "receipt", "stats", "--decision", "allow", "--since", "5m", "--group-by", "metadata.approver_display_name")
	people, kernelPart, found := strings.Cut(so, "not a person")
	if code != 0 || !strings.Contains(so, "total 2 receipts") || !strings.Contains(people, "Finance Lead") || strings.Contains(people, "chio kernel") ||
		!found || !strings.Contains(kernelPart, "chio kernel (auto_approve_advisory)  1") {
		t.Fatalf("stats --since 5m: exit %d; want the auto-approval set apart from the people, of the same window\n%s%s", code, so, se)
	}
}
