package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// chio await ar-MINE learns its call's request id from GET /approvals/ar-MINE
// and then reads that call. An answer about another request (a proxy's
// cache, a wrong route) or a call status for another request must not be
// taken for MINE's: await would exit 0 printing another call's output while
// MINE never ran.
func TestAwaitRefusesAnAnswerAboutAnotherCall(t *testing.T) {
	w := newApprovalWorld(t)
	mine := w.refund(t, 450)
	other := w.refund(t, 460)
	if _, se, code := w.run(adminEnv(), "approval", "approve", other.ApprovalRequestID, "--key", w.key("lead")); code != 0 {
		t.Fatalf("setup approve: %d %s", code, se)
	}
	target, _ := url.Parse(w.url)
	for name, rewrite := range map[string]func(p string) string{
		// GET /approvals/MINE answered with OTHER's view.
		"approval view": func(p string) string {
			return strings.Replace(p, "/approvals/"+mine.ApprovalRequestID, "/approvals/"+other.ApprovalRequestID, 1)
		},
		// GET /v1/calls/MINE answered with OTHER's status.
		"call status": func(p string) string {
			return strings.Replace(p, "/v1/calls/"+mine.RequestID, "/v1/calls/"+other.RequestID, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				r.URL.Path = rewrite(r.URL.Path)
				proxyTo(rw, r, target)
			}))
			defer front.Close()
			env := adminEnv()
			env["CHIO_URL"] = front.URL
			for _, id := range []string{mine.ApprovalRequestID, mine.RequestID} {
				so, se, code := w.run(env, "await", id, "--timeout", "2s")
				if code == cli.ExitOK || code == cli.ExitDenied || strings.Contains(so, "rf-") {
					t.Fatalf("await %s (still pending) exited %d with another call's answer:\n%s\n%s", id, code, so, se)
				}
			}
		})
	}
}

// An answer naming a call status chiod never sends is not chiod's: await
// must not take it for "still waiting" and ask again at once, thousands of
// times a second, until its timeout.
func TestAwaitUnknownStatusIsNotPolledInAHotLoop(t *testing.T) {
	w := newApprovalWorld(t)
	var gets atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"status":"queued","request_id":"req-1"}`)
	}))
	defer front.Close()
	env := adminEnv()
	env["CHIO_URL"] = front.URL
	so, se, code := w.run(env, "await", "req-1", "--timeout", "1s")
	if code == cli.ExitOK || code == cli.ExitDenied {
		t.Fatalf("exit %d", code)
	}
	if n := gets.Load(); n > 20 {
		t.Fatalf("await asked %d times in 1s for a status it does not know (exit %d)\n%s\n%s", n, code, so, se)
	}
}
