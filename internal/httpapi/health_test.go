package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/testkit"
)

// GET /readyz needs no credential, so a failed store is reported as
// "store unavailable" and nothing more: the store's own error (for
// PostgreSQL it may name the host, user and database) goes to the log,
// once per distinct reason, not to whoever asks.
func TestReadyzHidesStoreErrorDetail(t *testing.T) {
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(auditPolicy, auditApprover.Public())})
	const detail = `failed to connect to host=db.internal user=chio database=chio_prod: password authentication failed`
	var failing atomic.Bool
	api, err := httpapi.New(httpapi.Config{Kernel: w.Kernel, Store: w.Store, AdminToken: "admin", Ready: func() error {
		if failing.Load() {
			return errors.New(detail)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)

	readyz := func() (int, string, httpapi.Readiness) {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		body, _ := io.ReadAll(rec.Body)
		var rd httpapi.Readiness
		if err := json.Unmarshal(body, &rd); err != nil {
			t.Fatalf("readyz body %s: %v", body, err)
		}
		return rec.Code, string(body), rd
	}
	if code, body, rd := readyz(); code != http.StatusOK || rd.Status != "ready" || rd.Store != "ok" {
		t.Fatalf("healthy store: %d %s", code, body)
	}
	failing.Store(true)
	for i := 0; i < 3; i++ {
		code, body, rd := readyz()
		if code != http.StatusServiceUnavailable || rd.Status != "unavailable" || rd.Store != "store unavailable" {
			t.Fatalf("failed store: %d %s", code, body)
		}
		for _, leak := range []string{"db.internal", "user=", "chio_prod", "password"} {
			if strings.Contains(body, leak) {
				t.Fatalf("readyz tells an anonymous client %q: %s", leak, body)
			}
		}
	}
	if n := strings.Count(logged.String(), "db.internal"); n != 1 {
		t.Fatalf("the store's error logged %d times over 3 probes, want once:\n%s", n, logged.String())
	}
}
