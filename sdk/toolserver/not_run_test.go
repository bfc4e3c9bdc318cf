package toolserver_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/sdk/toolserver"
)

// Dedupe's own 503s refuse a delivery before the handler runs, and say so
// with Chio-Not-Run: true: without it chio reads a 503 as "may have run"
// (a proxy's), and an at_most_once call would end unknown instead of being
// sent again. A handler's own 503 is passed on as the handler wrote it:
// only the handler knows whether it ran anything.
func TestOwnRefusalsSayNothingRan(t *testing.T) {
	if toolserver.NotRunHeader != dispatch.NotRunHeader {
		t.Fatalf("toolserver sets %q, chio's HTTP dispatch reads %q", toolserver.NotRunHeader, dispatch.NotRunHeader)
	}
	entered, gate := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(toolserver.IdempotencyKeyHeader) == "req-own-503" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		close(entered)
		<-gate
		w.Write([]byte(`{"paid":true}`))
	})
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, h)
	first := make(chan int)
	go func() {
		st, _, _ := post(t, url, "req-dup", `{}`)
		first <- st
	}()
	<-entered // the first delivery holds the key
	st, _, hdr := post(t, url, "req-dup", `{}`)
	close(gate)
	if st != http.StatusServiceUnavailable || hdr.Get(toolserver.NotRunHeader) != "true" {
		t.Fatalf("a duplicate in progress: %d, %s=%q; want 503 with %s: true", st, toolserver.NotRunHeader, hdr.Get(toolserver.NotRunHeader), toolserver.NotRunHeader)
	}
	if st := <-first; st != http.StatusOK {
		t.Fatalf("first delivery: %d", st)
	}
	st, _, hdr = post(t, url, "req-own-503", `{}`)
	if st != http.StatusServiceUnavailable || hdr.Get(toolserver.NotRunHeader) != "" {
		t.Fatalf("the handler's own 503: %d, %s=%q; want 503 without the header", st, toolserver.NotRunHeader, hdr.Get(toolserver.NotRunHeader))
	}
}

// A key whose earlier delivery was cut off (the handler died mid-call) is
// answered 409 with Chio-Outcome: unknown, which chio records as "may have
// run" instead of "the tool ran and failed".
func TestInterruptedKeySaysOutcomeUnknown(t *testing.T) {
	if toolserver.OutcomeHeader != dispatch.OutcomeHeader {
		t.Fatalf("toolserver sets %q, chio's HTTP dispatch reads %q", toolserver.OutcomeHeader, dispatch.OutcomeHeader)
	}
	first := true
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false
			panic(http.ErrAbortHandler) // dies after its effect, before answering
		}
		w.Write([]byte(`{"paid":true}`))
	})
	_, url := serve(t, filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{}, h)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	req.Header.Set(toolserver.IdempotencyKeyHeader, "req-cut")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the aborted delivery was answered %d", resp.StatusCode)
	}
	st, _, hdr := post(t, url, "req-cut", `{}`)
	if st != http.StatusConflict || hdr.Get(toolserver.OutcomeHeader) != "unknown" {
		t.Fatalf("repeat of an interrupted key: %d, %s=%q; want 409 with %s: unknown", st, toolserver.OutcomeHeader, hdr.Get(toolserver.OutcomeHeader), toolserver.OutcomeHeader)
	}
}
