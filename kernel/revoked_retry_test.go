package kernel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// A capability revoked while an allowed call is being retried stops the
// re-sends: revocation is the operator's answer to a compromised agent, and
// a call its tool never received must not reach it afterwards. A call an
// earlier attempt may have reached ends "unknown"; one that certainly never
// left ends "not delivered". Either way the receipt says why.
func TestRevocationStopsResends(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first error
		want  string
	}{
		{"never left", &kernel.DeliveryError{Err: errors.New("connection refused"), NotDelivered: true, Retryable: true}, kernel.ExecutionNotDelivered},
		{"may have run", &kernel.DeliveryError{Err: errors.New("connection reset after the request was sent"), Retryable: true}, kernel.ExecutionUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w *waWorld
			var once sync.Once
			tool := &scriptedTool{script: []error{tc.first}}
			tool.check = func(kernel.DispatchRequest) {
				once.Do(func() {
					if err := w.Kernel.Revoke(context.Background(), w.Cap.ID); err != nil {
						t.Error(err)
					}
				})
			}
			w = newWAWorld(t, tool)
			out := w.Submit(t, "echo", `{"a":1}`, "") // at_least_once: retried
			if n := len(tool.deliveries(out.RequestID)); n != 1 {
				t.Fatalf("%d deliveries; the capability was revoked after the first, want 1", n)
			}
			if out.Execution != tc.want || !strings.Contains(out.ToolError, "revoked") {
				t.Fatalf("execution %q (%s); want %q naming the revocation", out.Execution, out.ToolError, tc.want)
			}
			rec, err := w.Kernel.Call(out.RequestID)
			if err != nil {
				t.Fatal(err)
			}
			if r := w.Receipt(t, rec.ReceiptID); !strings.Contains(r.Decision.Reason, "revoked") {
				t.Fatalf("incomplete receipt reason %q", r.Decision.Reason)
			}
		})
	}
}
