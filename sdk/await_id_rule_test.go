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

// The approval-id methods hold the same rule: an approval id chiod would
// refuse is a bad request, sent nowhere (Cancel and ResumeWithApproval
// checked only the ar- prefix; Approval and Respond checked nothing).
func TestApprovalMethodsRefuseAnIDOutsideChiodsRule(t *testing.T) {
	const tok = `{"approval_id":"ar-1"}`
	for name, id := range map[string]string{
		"space":    "ar-1 2",
		"slash":    "ar-1/respond",
		"too long": "ar-" + strings.Repeat("x", 200),
	} {
		f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{}`)}}
		c := testClient(t, f)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, errCancel := c.Cancel(ctx, id, "not needed")
		_, errResume := c.ResumeWithApproval(ctx, id, []byte(tok))
		_, errApproval := c.Approval(ctx, id)
		_, errRespond := c.Respond(ctx, id, []byte(tok))
		cancel()
		for op, err := range map[string]error{"Cancel": errCancel, "ResumeWithApproval": errResume, "Approval": errApproval, "Respond": errRespond} {
			if !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s: %s(%q) = %v, want ErrBadRequest", name, op, id, err)
			}
		}
		if len(f.paths) != 0 {
			t.Errorf("%s: %d requests sent: %q", name, len(f.paths), f.paths)
		}
	}
}
