package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// wantMayHaveRun fails unless the call succeeded or failed as "may have
// run" (a maybe-delivered DeliveryError): never a final tool error, which
// would record a tool that ran and succeeded as one that ran and failed.
func wantMayHaveRun(t *testing.T, what string, res kernel.DispatchResult, err error) {
	t.Helper()
	if res.ToolError != "" {
		t.Fatalf("%s: settled as a final tool error %q; want success or a maybe-delivered DeliveryError (unknown)", what, res.ToolError)
	}
	var de *kernel.DeliveryError
	if err != nil && (!errors.As(err, &de) || de.NotDelivered || !de.Retryable) {
		t.Fatalf("%s: want success or a retryable maybe-delivered DeliveryError, got %v", what, err)
	}
}

// On stdio an oversized line is a waiting call's answer only if it says
// so: a server notification over MaxMessageBytes sent while a payment runs
// does not make the payment a tool error (it ran and succeeded).
func TestOversizedStdioNotificationIsNotTheCallsAnswer(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "bank", Command: stdioPeer(t, "notify-big")})
	res, err := dispatch(s, "req-pay", "bank", "pay", `{}`)
	wantMayHaveRun(t, "a payment whose server sent an oversized log notification", res, err)
}

// Nor does an oversized response carrying another request's id.
func TestOversizedStdioResponseToAnotherIDIsNotTheCallsAnswer(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "bank", Command: stdioPeer(t, "other-id-big")})
	res, err := dispatch(s, "req-pay", "bank", "pay", `{}`)
	wantMayHaveRun(t, "a payment whose server sent an oversized response to another id", res, err)
}

// An oversized answer whose id comes after its (huge) result cannot be
// told from anything else by its first bytes: the call may have run, and
// it settles as unknown, not as a tool error.
func TestOversizedStdioAnswerWithIDAfterResultIsUnknown(t *testing.T) {
	s := startSet(t, fastOptions(), policy.Server{ID: "bank", Command: stdioPeer(t, "result-first-big")})
	res, err := dispatch(s, "req-pay", "bank", "pay", `{}`)
	wantMayHaveRun(t, "an oversized answer with its id after the result", res, err)
	if err == nil {
		t.Fatal("an oversized answer cannot be a success")
	}
}

// sseCall is a tools/call handler that answers on an event stream with
// the given events (each one event's data), in order.
func sseCall(events ...func(id json.RawMessage) string) func(http.ResponseWriter, *http.Request, json.RawMessage, int32) {
	return func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Mcp-Session-Id", "raw-session")
		w.WriteHeader(http.StatusOK)
		for _, e := range events {
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", e(id))
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

func bigNotification(json.RawMessage) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%q}}`, strings.Repeat("l", MaxMessageBytes+10))
}

func paidAnswer(id json.RawMessage) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"paid"}]}}`, id)
}

func bigAnswer(id json.RawMessage) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, strings.Repeat("y", MaxMessageBytes+10))
}

// Over Streamable HTTP, an oversized progress or log notification on a
// tools/call's event stream, sent before its answer, is not the answer.
func TestOversizedSSENotificationIsNotTheCallsAnswer(t *testing.T) {
	s := &rawMCP{tools: payTool}
	s.onCall = sseCall(bigNotification, paidAnswer)
	set, _ := startRaw(t, s, "")
	res, err := dispatch(set, "req-pay", "bank", "pay", `{}`)
	wantMayHaveRun(t, "a payment whose event stream carried an oversized notification", res, err)
}

// An oversized event that is the call's own answer stays a final tool
// error (asking again gets the same answer).
func TestOversizedSSEAnswerIsAToolError(t *testing.T) {
	s := &rawMCP{tools: payTool}
	s.onCall = sseCall(bigAnswer)
	set, _ := startRaw(t, s, "")
	res, err := dispatch(set, "req-pay", "bank", "pay", `{}`)
	if err != nil || !strings.Contains(res.ToolError, "larger than") {
		t.Fatalf("an oversized answer on the call's event stream: want a ToolError, got %q / %v", res.ToolError, err)
	}
}
