package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// The terminal channel shows a request's id escaped in its header line,
// as every string of the request, but "skipped ID" printed it raw: a
// request id from the stream holding an escape sequence (a proxy in
// between, a chiod that is not chio's) erased what the approver had just
// read once they skipped it, and wrote what it liked in its place.
func TestWatchEscapesTheIDItSkips(t *testing.T) {
	w := newApprovalWorld(t)
	lead, err := keys.LoadPrivateKey(w.key("lead"))
	if err != nil {
		t.Fatal(err)
	}
	req := approval.Request{ApprovalID: "ar-1\x1b[2K\r\x1b[1Aapproved ar-1: executed", Kind: approval.KindToolCall,
		ToolServer: "demo", ToolName: "echo", Summary: "s", Quorum: 1, ExpiresAt: 4102444800,
		Status: approval.StatusPending, TrustedApprovers: []string{lead.Public().String()}}
	ev, _ := json.Marshal(kernel.Event{Type: kernel.EventApprovalRequested, Approval: &req})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/approvals/stream" {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(rw, "data: %s\n\n", ev)
		rw.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	env := map[string]string{"CHIO_URL": srv.URL, "CHIO_READ_TOKEN": "reader"}
	so, se, _ := w.watch(t, env, strings.NewReader("s\n"), "--key", w.key("lead"))
	if !strings.Contains(so, "skipped ar-1") {
		t.Fatalf("the request was not skipped:\nstdout %q\nstderr %q", so, se)
	}
	if terminalActive(so + se) {
		t.Fatalf("watch printed the request id from the stream raw:\n%q", so)
	}
}
