package dispatch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chiokernel/chio/kernel"
)

// Which refusals let the kernel send a call again even under at_most_once
// ("not delivered"): only those that cannot have come after the tool ran.
// A 503 is one only with the tool server's own Chio-Not-Run: a proxy's 503
// (Envoy's "upstream reset before response started", a load balancer whose
// backend went away) can follow a request the tool acted on. A status with
// Chio-Outcome: unknown (sdk/toolserver's 409 for an interrupted key) is
// "may have run" and final, never "the tool ran and failed".
func TestRefusalStatusesSayWhetherTheCallRan(t *testing.T) {
	tests := []struct {
		name         string
		status       int
		header       map[string]string
		notDelivered bool
		retryAfter   time.Duration
		final        bool // the tool server says the outcome is unknown: not retried
	}{
		{name: "429 rate limited", status: 429, header: map[string]string{"Retry-After": "2"}, notDelivered: true, retryAfter: 2 * time.Second},
		{name: "503 from the tool server, not run", status: 503, header: map[string]string{NotRunHeader: "true", "Retry-After": "1"}, notDelivered: true, retryAfter: time.Second},
		{name: "503 from a proxy", status: 503, header: map[string]string{"Retry-After": "1"}, notDelivered: false, retryAfter: time.Second},
		{name: "503 with another marker value", status: 503, header: map[string]string{NotRunHeader: "yes"}, notDelivered: false},
		{name: "502 gateway", status: 502, notDelivered: false},
		{name: "504 gateway timeout", status: 504, notDelivered: false},
		{name: "409 outcome unknown", status: 409, header: map[string]string{OutcomeHeader: "unknown"}, notDelivered: false, final: true},
		{name: "502 outcome unknown", status: 502, header: map[string]string{OutcomeHeader: "unknown"}, notDelivered: false, final: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			r := newTestRouter(t, httpServer("s", srv.URL))
			res, err := r.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "id", Server: "s", Tool: "t"})
			var de *kernel.DeliveryError
			if !errors.As(err, &de) {
				t.Fatalf("want a DeliveryError, got %v (output %s, tool error %q)", err, res.Output, res.ToolError)
			}
			if de.Retryable == tc.final {
				t.Errorf("%d: Retryable = %v", tc.status, de.Retryable)
			}
			if de.NotDelivered != tc.notDelivered {
				t.Errorf("NotDelivered = %v, want %v", de.NotDelivered, tc.notDelivered)
			}
			if de.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", de.RetryAfter, tc.retryAfter)
			}
		})
	}
}
