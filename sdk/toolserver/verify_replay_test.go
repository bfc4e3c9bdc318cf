package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/sdk/toolserver"
)

// The signature covers the server id, sent_at and the body, but not the
// Idempotency-Key header that Dedupe keys on. A delivery captured on its
// way to the tool server (a proxy's log, a mirror) could be sent again
// within MaxAge under another Idempotency-Key (or none, with
// AllowMissingKey): it verifies, Dedupe sees a new key, and the refund
// runs twice. The key must be the one chio signed: the body's request_id.
func TestVerifierRefusesAReplayUnderAnotherIdempotencyKey(t *testing.T) {
	kernelKey := keys.FromSeed([]byte("kernel-kernel-kernel-kernel-32by"))
	var mu sync.Mutex
	runs := 0
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"refund":"ok"}`))
	})
	d, err := toolserver.Open(filepath.Join(t.TempDir(), "keys.db"), toolserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, err := toolserver.NewVerifier(kernelKey.Public().String(), "payments")
	if err != nil {
		t.Fatal(err)
	}
	served := v.Wrap(d.Wrap(handler))
	var sent struct {
		header http.Header
		body   []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.header = r.Header.Clone()
		sent.body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(sent.body))
		served.ServeHTTP(w, r)
	}))
	defer srv.Close()
	now := time.Now()
	router, err := dispatch.New([]policy.Server{{ID: "payments", Transport: "http", URL: srv.URL}}, t.TempDir(),
		dispatch.WithCallSigner(kernelKey.SignRaw, func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	res, err := router.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "req-1", Server: "payments", Tool: "issue_refund",
		Arguments: json.RawMessage(`{"amount":450,"currency":"USD"}`), Attempt: 1})
	if err != nil || res.ToolError != "" {
		t.Fatalf("chio's signed call: %+v %v", res, err)
	}

	// The same delivery again, a minute later, under a fresh key.
	v.Now = func() time.Time { return now.Add(time.Minute) }
	replay := sent.header.Clone()
	replay.Set(toolserver.IdempotencyKeyHeader, "req-1-again")
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent.body))
	r.Header = replay
	rec := httptest.NewRecorder()
	served.ServeHTTP(rec, r)
	mu.Lock()
	defer mu.Unlock()
	if runs != 1 {
		t.Fatalf("a captured delivery replayed under Idempotency-Key req-1-again ran the handler %d times (answer %d), want 1", runs, rec.Code)
	}
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("the replay under another Idempotency-Key: %d, want 401", rec.Code)
	}
}
