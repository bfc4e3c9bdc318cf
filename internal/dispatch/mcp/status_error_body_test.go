package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A server, or a proxy in front of it, often answers a failed POST with a
// JSON-RPC error in its body as well as the status (the MCP SDKs' servers
// do; so do MCP gateways: 504 "upstream timed out"). The status still
// says what became of the call, as for a body that is not JSON-RPC: a 5xx
// is "may have run" — the proxy's backend may have started the tool — and
// a refusal before acting (400, 429, …) is "not delivered". Read as the
// server's own JSON-RPC answer ("the server refused it": a tool error),
// a 504 whose backend ran the tool told the agent that calling again runs
// it again, and the kernel never asked again under at_least_once.
func TestToolsCallStatusDecidesEvenWithAJSONRPCErrorBody(t *testing.T) {
	tests := []struct {
		status       int
		notDelivered bool
		retryable    bool
	}{
		{status: http.StatusInternalServerError, retryable: true},
		{status: http.StatusBadGateway, retryable: true},
		{status: http.StatusServiceUnavailable, retryable: true},
		{status: http.StatusGatewayTimeout, retryable: true},
		{status: http.StatusBadRequest, notDelivered: true},
		{status: http.StatusTooManyRequests, notDelivered: true, retryable: true},
		{status: http.StatusConflict},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			s := &rawMCP{tools: payTool}
			s.onCall = func(w http.ResponseWriter, r *http.Request, id json.RawMessage, n int32) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"gateway: upstream timed out"}}`, id)
			}
			set, _ := startRaw(t, s, kernel.AtLeastOnce)
			res, err := dispatch(set, "req-status-body", "bank", "pay", `{"amount":1}`)
			var de *kernel.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("%d with a JSON-RPC error body: recorded as the server's answer (tool error %q, err %v); "+
					"want a DeliveryError as for %d without one", tc.status, res.ToolError, err, tc.status)
			}
			if de.NotDelivered != tc.notDelivered || de.Retryable != tc.retryable {
				t.Fatalf("%d: NotDelivered=%v Retryable=%v, want %v %v (%v)", tc.status, de.NotDelivered, de.Retryable,
					tc.notDelivered, tc.retryable, err)
			}
		})
	}
}
