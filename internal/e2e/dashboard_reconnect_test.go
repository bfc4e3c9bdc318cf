package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/chiokernel/chio/kernel"
)

// streamGate serves chiod's API and holds every new event stream while it
// is shut: the live stream dropped (a network hiccup, a load balancer's
// idle cut, the kernel dropping a slow subscriber) and not yet back.
type streamGate struct {
	h    http.Handler
	mu   sync.Mutex
	open chan struct{}
}

func (g *streamGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/approvals/stream" {
		g.mu.Lock()
		open := g.open
		g.mu.Unlock()
		select {
		case <-open:
		case <-r.Context().Done():
			return
		}
	}
	g.h.ServeHTTP(w, r)
}

func (g *streamGate) shut() { g.mu.Lock(); g.open = make(chan struct{}); g.mu.Unlock() }
func (g *streamGate) reopen() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

// TestDashboardDropsCardsResolvedWhileItsStreamWasDown: a request resolved
// while the dashboard's live stream was down (its approval.resolved event
// went nowhere) must leave the list once the stream is back. chiod's
// stream replays only what is pending (stream.go: "the client reconnects
// and gets a fresh replay"), so a page that only adds what the replay
// sends kept the card, "decide within …" counting down and Approve live,
// for a request already cancelled (or decided by someone else, or timed
// out), and the Pending count said one more than there is.
func TestDashboardDropsCardsResolvedWhileItsStreamWasDown(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	open := make(chan struct{})
	close(open)
	gate := &streamGate{h: lk.api, open: open}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)

	gone := lk.pendingRefund(t, 650, "Refund a damaged item")
	stays := lk.pendingRefund(t, 700, "Refund a lost parcel")
	ctx := newBrowser(t)
	browse(t, ctx, "open, import key, see both cards",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)),
		chromedp.WaitVisible(css(card(gone.ApprovalRequestID))),
		chromedp.WaitVisible(css(card(stays.ApprovalRequestID))))

	// The stream drops and stays down while the request is cancelled.
	gate.shut()
	srv.CloseClientConnections()
	browse(t, ctx, "the page notices the stream is down", chromedp.WaitReady(css(`#live[data-state="down"]`)))
	if _, err := lk.k.Cancel(context.Background(), gone.ApprovalRequestID, "the customer withdrew the claim", kernel.CancelledByAdmin); err != nil {
		t.Fatal(err)
	}
	gate.reopen()
	browse(t, ctx, "the stream is back", chromedp.WaitReady(css(`#live[data-state="live"]`)))

	// Polled, with a generous bound: the page learns it after the replay.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := read(t, ctx, "cards", chromedp.Evaluate[int](
			`document.querySelectorAll('`+card(gone.ApprovalRequestID)+`').length`))
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			count := read(t, ctx, "count", chromedp.Text(css("#pending-count")))
			t.Fatalf("the card of %s, cancelled while the stream was down, is still listed after it came back (Pending count %s)",
				gone.ApprovalRequestID, count)
		}
		time.Sleep(200 * time.Millisecond)
	}
	browse(t, ctx, "the request still pending keeps its card", chromedp.WaitVisible(css(card(stays.ApprovalRequestID))))
	if n := read(t, ctx, "count", chromedp.Text(css("#pending-count"))); n != "1" {
		t.Errorf("Pending count %s after the stream came back, want 1", n)
	}
}
