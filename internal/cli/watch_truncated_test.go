package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/kernel"
)

// TestWatchPromptsTheRequestsATruncatedReplayLeftOut: a stream's replay of
// pending requests stops at 100 requests or 256 KiB and then says
// stream.truncated (GET /approvals/pending lists the rest). The watch
// ignored that event, so a request beyond the replay — one an agent can
// push there by parking a hundred others first — was never shown and the
// watch said nothing of it. The watch lists the pending requests its key
// may decide and prompts those the replay left out.
func TestWatchPromptsTheRequestsATruncatedReplayLeftOut(t *testing.T) {
	w := newApprovalWorld(t)
	first := w.refund(t, 450)
	second := w.refund(t, 300)
	replayed, err := w.k.Approval(first.ApprovalRequestID)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := kernel.Event{Type: kernel.EventApprovalRequested, Approval: replayed}.JSON()
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(w.url)
	over := make(chan struct{}) // the test is over: let go of the stream
	// chiod's stream as if its replay limits had been reached after the
	// first request; everything else is the real chiod.
	cut := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/approvals/stream" {
			proxyTo(rw, r, target)
			return
		}
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.Write([]byte("id: 1\nevent: approval.requested\ndata: " + string(frame) + "\n\n"))
		rw.Write([]byte("id: 2\nevent: " + httpapi.EventStreamTruncated + "\ndata: " +
			`{"type":"stream.truncated","replayed":1,"max_replay":100,"max_replay_bytes":262144,"message":"more requests are pending than the 1 replayed; GET /approvals/pending lists them"}` + "\n\n"))
		rw.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-over:
		}
	}))
	defer cut.Close()
	defer close(over)
	so := &reconnectLines{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main([]string{"approval", "watch", "--key", w.key("lead")},
			&cli.Env{Stdin: strings.NewReader("s\ns\n"), Stdout: so, Stderr: so, Getenv: func(k string) string {
				return map[string]string{"CHIO_URL": cut.URL, "CHIO_ADMIN_TOKEN": approvalAdminToken}[k]
			}})
	}()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(so.String(), "skipped "+second.ApprovalRequestID) {
			t.Fatalf("exit %d\n%s", code, so.String())
		}
	case <-time.After(30 * time.Second):
		// The second "s" is still waiting for a request to answer.
		t.Fatalf("the watch never showed %s, which the replay left out:\n%s", second.ApprovalRequestID, so.String())
	}
}
