package chio

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A caller-chosen request id is checked against chiod's rule (1..128
// characters of [A-Za-z0-9._:-], not "." or "..", not starting with "ar-")
// before anything is sent, as the TypeScript and Python SDKs do. An id with
// a newline cannot even go in the Idempotency-Key header: net/http refused
// it and CallTool reported the call as outcome unknown, "it may have run",
// though not a byte was sent.
func TestCallToolChecksRequestIDBeforeSending(t *testing.T) {
	f := &fakeChiod{handlers: []http.HandlerFunc{reply(200, `{"status":"allowed","request_id":"x"}`)}}
	c := testClient(t, f)
	for name, id := range map[string]string{
		"newline":   "req-1\nX-Injected: 1",
		"too long":  strings.Repeat("a", 129),
		"slash":     "req/1",
		"space":     "req 1",
		"dot":       ".",
		"dot dot":   "..",
		"non-ASCII": "req-é",
	} {
		_, err := c.CallTool(context.Background(), Call{Server: "demo", Tool: "echo", RequestID: id})
		if !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrOutcomeUnknown) {
			t.Errorf("%s: err = %v, want ErrBadRequest with nothing sent", name, err)
		}
	}
	if len(f.bodies) != 0 {
		t.Fatalf("%d requests sent for ids chiod refuses", len(f.bodies))
	}
}
