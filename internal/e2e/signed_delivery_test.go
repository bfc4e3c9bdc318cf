package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/sdk/toolserver"
)

// chiod signs the calls it sends to http tool servers: a tool server that
// pins chiod's kernel key (from GET /healthz) with toolserver.Verifier runs
// them, and refuses a call posted to it by anyone else.
func TestChiodSignsCallsToHTTPToolServers(t *testing.T) {
	var verifier atomic.Pointer[toolserver.Verifier]
	var ran atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := verifier.Load()
		if v == nil {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		v.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ran.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"paid":true}`))
		})).ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	config := filepath.Join(dir, "signed.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(diskFullPolicy, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, config, filepath.Join(dir, "data"))
	var health struct {
		KernelKey string `json:"kernel_key"`
	}
	d.do(t, "GET", "/healthz", nil, &health)
	v, err := toolserver.NewVerifier(health.KernelKey, "tools")
	if err != nil {
		t.Fatal(err)
	}
	verifier.Store(v)

	a := newAgent(t, d, "pay")
	client := &http.Client{Timeout: 10 * time.Second}
	code, body, err := postCall(context.Background(), client, d.url, a.call(t, "signed-1", "tools", "pay", `{"amount":1}`, ""))
	if err != nil || code != http.StatusOK || ran.Load() != 1 {
		t.Fatalf("chiod's call to a verifying tool server: %d %+v %v (ran %d times)\n%s", code, body, err, ran.Load(), d.log())
	}
	// The same body posted by anyone else is refused and never runs.
	resp, err := http.Post(srv.URL, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || ran.Load() != 1 {
		t.Fatalf("an unsigned call: %d (ran %d times), want 401 and no run", resp.StatusCode, ran.Load())
	}
}
