package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A call that never left chio is NotDelivered even when the session it
// would have used failed on an oversized answer: classify looks at
// whether it was sent before anything else.
func TestUnsentCallIsNotDeliveredWhateverFailedTheSession(t *testing.T) {
	u := &Upstream{id: "bank", timeout: time.Second}
	cctx, cancel := context.WithCancel(context.Background())
	cancel() // a cancelled call: classify does not touch the (absent) session
	res, err := u.classify(context.Background(), cctx, nil, slot{oversize: true}, errors.New("connection closed"))
	var de *kernel.DeliveryError
	if !errors.As(err, &de) || !de.NotDelivered || !de.Retryable || res.ToolError != "" {
		t.Fatalf("an unsent call after an oversized message: want NotDelivered+Retryable, got ToolError %q, err %v", res.ToolError, err)
	}
}

// Over Streamable HTTP an oversized body answers its own POST only: a
// call in flight on the same session when it arrives (which may have run)
// is not settled as a tool error, and calls made afterwards, which the
// session's failure keeps from leaving chio, are NotDelivered.
func TestOversizedHTTPAnswerSettlesOnlyItsOwnCall(t *testing.T) {
	release := make(chan struct{})
	s := &rawMCP{tools: `[{"name":"pay","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]`}
	s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		if n == 1 { // pay, held until big has been answered
			<-release
			okResult(w, id, "paid")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, strings.Repeat("y", MaxMessageBytes+10))
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before srv.Close, which waits for the held handler
	set := startSet(t, fastOptions(), policy.Server{ID: "bank", URL: srv.URL + "/mcp"})

	type outcome struct {
		res kernel.DispatchResult
		err error
	}
	paid := make(chan outcome, 1)
	go func() {
		res, err := dispatch(set, "req-pay", "bank", "pay", `{}`)
		paid <- outcome{res, err}
	}()
	for s.calls.Load() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	big, err := dispatch(set, "req-big", "bank", "big", `{}`)
	if err != nil || !strings.Contains(big.ToolError, "larger than") {
		t.Fatalf("the oversized answer: want a ToolError, got %q / %v", big.ToolError, err)
	}
	// Calls made now meet the failed session (or none): never a tool error.
	for i := 0; i < 5; i++ {
		res, err := dispatch(set, fmt.Sprintf("req-later-%d", i), "bank", "pay", `{}`)
		if strings.Contains(res.ToolError, "larger than") {
			t.Fatalf("a later call was settled by big's oversized answer: %q / %v", res.ToolError, err)
		}
	}
	unblock()
	p := <-paid
	if strings.Contains(p.res.ToolError, "larger than") {
		t.Fatalf("the call in flight was settled by big's oversized answer: %q", p.res.ToolError)
	}
	var de *kernel.DeliveryError
	if p.err != nil && (!errors.As(p.err, &de) || de.NotDelivered) {
		t.Fatalf("the call in flight (it reached the server) failed as %v; want a maybe-delivered DeliveryError", p.err)
	}
}

func mustID(t *testing.T, v int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(v))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// An answer over MaxMessageBytes on stdio is a final tool error: the SDK's
// own frame limit must not fail the connection first, which would make it a
// retryable maybe-delivered failure (the kernel would run the tool again).
func TestOversizedStdioAnswerIsAToolError(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "peer", Command: stdioPeer(t, "big")})
	res, err := dispatch(s, "req-big", "peer", "big", `{}`)
	if err != nil || !strings.Contains(res.ToolError, "larger than") {
		var de *kernel.DeliveryError
		retry := errors.As(err, &de) && de.Retryable
		t.Fatalf("an answer over %d bytes must be a ToolError (final); got ToolError %q, err %v (retryable=%v)",
			MaxMessageBytes, res.ToolError, err, retry)
	}
}
