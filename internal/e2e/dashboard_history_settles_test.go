package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/approval"
)

// heldCalls holds the calls whose arguments say "hold":NAME until the
// channel stored under NAME is closed (echoDispatcher).
var heldCalls sync.Map

func holdCall(args json.RawMessage) {
	var a struct {
		Hold string `json:"hold"`
	}
	if json.Unmarshal(args, &a) != nil || a.Hold == "" {
		return
	}
	if ch, ok := heldCalls.Load(a.Hold); ok {
		<-ch.(chan struct{})
	}
}

// TestDashboardHistoryTellsHowAnApprovedCallEnded: a request resolves
// (approval.resolved) before its approved call is sent, so History read
// it then as "Approved by CFO — running". What the tool did next
// (call.completed on the same stream) did not reach the page: the row
// kept "running" for a call that had failed, until something else was
// resolved. History must say how the call ended once it has.
func TestDashboardHistoryTellsHowAnApprovedCallEnded(t *testing.T) {
	lk, open := dashboardAsLead(t)
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	heldCalls.Store(t.Name(), hold)
	t.Cleanup(func() { release(); heldCalls.Delete(t.Name()) }) // before the kernel closes: a failed test frees the call
	out := lk.submit(t, "refunds", "issue_refund",
		fmt.Sprintf(`{"order":"A-901","amount":650,"currency":"USD","fail":true,"hold":%q}`, t.Name()),
		`{"purpose":"Refund a damaged item","max_amount":{"units":650,"currency":"USD"}}`)
	id := out.ApprovalRequestID
	ctx := open()
	browse(t, ctx, "history", press("#tab-history"), chromedp.WaitVisible(css("#view-history")))

	var view struct{ Request *approval.Request }
	lk.get(t, "/approvals/"+id, &view)
	tok := signToken(t, "cfo.pem", view.Request, approval.StatusApproved, "")
	done := make(chan error, 1)
	go func() {
		_, err := lk.k.Respond(context.Background(), id, tok, "", "api")
		done <- err
	}()
	row := `#history-rows tr[data-id="` + id + `"] .h-outcome`
	rowText := func() string {
		return read(t, ctx, "history row", chromedp.Evaluate[string](`(document.querySelector('`+row+`') || {}).textContent || ''`))
	}
	poll := func(what string, ok func(string) bool) string {
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := rowText()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the history row of %s says %q", what, id, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	poll("while the approved call runs", func(s string) bool { return strings.Contains(s, "running") })
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	poll("once the call failed", func(s string) bool { return strings.Contains(s, "the tool failed: card network timeout") })
}
