package chio

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Await and Status read a call's state as CallTool reads its answer
// (testdata/sdk/call_outcomes.json): one that can be read two ways — a
// denial beside a "Status" saying allowed, which encoding/json took for an
// allow, or a status named twice — is not chiod's and never the call's
// outcome.
func TestAwaitRefusesAStateReadTwoWays(t *testing.T) {
	for name, body := range map[string]string{
		"Status beside status": `{"status":"denied","request_id":"req-1","reason":"no","guard":"g","receipt_id":"rc-1","Status":"allowed","output":{"refund":"re_99"}}`,
		"status twice":         `{"status":"denied","request_id":"req-1","reason":"no","guard":"g","receipt_id":"rc-1","status":"allowed","output":{"refund":"re_99"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, body)
			}))
			defer srv.Close()
			c := clientAt(t, srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if res, err := c.Await(ctx, "req-1"); err == nil || errors.Is(err, ErrTimedOut) {
				t.Fatalf("Await: %+v, %v; want an answer that cannot be read", res, err)
			}
			if res, err := c.Status(ctx, "req-1"); err == nil {
				t.Fatalf("Status: %+v; want an answer that cannot be read", res)
			}
		})
	}
}
