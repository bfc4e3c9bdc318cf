package chio

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Await, Status and ResumeWithApproval take an id from the caller (often
// read back from a file or another process's output). An id chiod's rule
// refuses (approval.ValidID) is a bad request, said before anything is
// sent, as CallTool does for a request id and as the TypeScript and Python
// SDKs do: it was sent, and a control character failed as a transport
// error, retried by Await until its context ended.
func TestAwaitAndStatusRefuseAnIDOutsideChiodsRule(t *testing.T) {
	for name, id := range map[string]string{
		"newline":        "req-1\nreq-2",
		"slash":          "req/1",
		"dot-dot":        "..",
		"too long":       "req-" + strings.Repeat("x", 200),
		"approval space": "ar-1 2",
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{"status":"allowed","request_id":"req-1"}`)}}
		c := testClient(t, f)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, errAwait := c.Await(ctx, id)
		_, errStatus := c.Status(ctx, id)
		cancel()
		for op, err := range map[string]error{"Await": errAwait, "Status": errStatus} {
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s: %s(%q) = %v, want ErrBadRequest", name, op, id, err)
			}
		}
		if len(f.paths) != 0 {
			t.Errorf("%s: %d requests sent: %q", name, len(f.paths), f.paths)
		}
	}
}
