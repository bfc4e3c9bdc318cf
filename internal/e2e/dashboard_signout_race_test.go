package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// signOutRace serves chiod's API; once armed, it refuses every new event
// stream (503, as chiod does with too many streams open) and holds the
// page's next sign-in (POST /v1/session) until the sign-out (DELETE
// /v1/session) has ended the session, then answers it before the page
// that reloads after the sign-out is served: the order a slow network can
// give them.
type signOutRace struct {
	h        http.Handler
	mu       sync.Mutex
	armed    bool
	arrived  chan struct{} // closed when the held sign-in arrives
	release  chan struct{} // closed when the sign-out has ended the session
	answered chan struct{} // closed when the held sign-in is answered
	held     sync.Once
	ended    sync.Once
}

func (g *signOutRace) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	armed := g.armed
	g.mu.Unlock()
	wait := func(c chan struct{}) {
		select {
		case <-c:
		case <-time.After(60 * time.Second):
		}
	}
	switch {
	case !armed:
	case r.URL.Path == "/approvals/stream":
		http.Error(w, `{"error":"unavailable","message":"too many streams"}`, http.StatusServiceUnavailable)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/session":
		first := false
		g.held.Do(func() { first = true })
		if first {
			close(g.arrived)
			wait(g.release)
			g.h.ServeHTTP(w, r)
			w.(http.Flusher).Flush()
			close(g.answered)
			return
		}
	case r.Method == http.MethodDelete && r.URL.Path == "/v1/session":
		g.h.ServeHTTP(w, r)
		g.ended.Do(func() { close(g.release) })
		return
	case r.URL.Path == "/dashboard/":
		select {
		case <-g.release: // the page reloading after the sign-out
			wait(g.answered)
		default:
		}
	}
	g.h.ServeHTTP(w, r)
}

// TestDashboardSignOutRacingAStreamRefusalLeavesNoSession: the live
// stream is refused (the page then signs in again and reconnects) while
// the approver presses Sign out. The sign-in in flight was answered after
// chiod ended the session, and its fresh session cookie stayed in the
// browser, live for 12 h, on a page that said it was signed out (the
// key gone, the sign-in screen shown): on a shared computer, whoever
// comes next reads every pending request with it. Nothing of the
// session may survive a sign-out.
func TestDashboardSignOutRacingAStreamRefusalLeavesNoSession(t *testing.T) {
	chromium(t)
	lk := startLiveKernel(t, `"dashboard"`, "", nil, mountDashboard(t))
	gate := &signOutRace{h: lk.api, arrived: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
	srv := httptest.NewServer(gate)
	t.Cleanup(srv.Close)
	ctx := newBrowser(t)
	browse(t, ctx, "open, import key",
		chromedp.Navigate(srv.URL+"/dashboard/"),
		chromedp.WaitVisible(css("#setup")),
		chromedp.SetUploadFiles(css("#key-file"), []string{filepath.Join(repoRoot(), "examples/keys/finance-lead.pem")}),
		chromedp.WaitReady(css(`#live[data-state="live"]`)))

	// The stream drops; its reconnection is refused, and the page signs in
	// again, held until the sign-out is through.
	gate.mu.Lock()
	gate.armed = true
	gate.mu.Unlock()
	srv.CloseClientConnections()
	select {
	case <-gate.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the page did not sign in again after its stream was refused")
	}
	browse(t, ctx, "sign out", press("#signout"), chromedp.WaitVisible(css("#setup")))
	if msg := read(t, ctx, "error", chromedp.Evaluate[string](`document.getElementById('global-error').hidden ? '' : document.getElementById('global-error').textContent`)); msg != "" {
		t.Fatalf("the sign-out says %q", msg)
	}
	status := read(t, ctx, "session", chromedp.Evaluate[int](`fetch('/v1/session', {credentials: 'same-origin'}).then((r) => r.status)`, chromedp.EvalAwaitPromise))
	if status != 401 {
		t.Fatalf("after Sign out, the browser still holds a live session: GET /v1/session answers %d, want 401", status)
	}
}
