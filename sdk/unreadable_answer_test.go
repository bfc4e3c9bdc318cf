package chio_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	chio "github.com/chiokernel/chio/sdk"
)

// A complete 200 answer to POST /v1/calls that the SDK cannot read (a
// proxy or WAF that replaced chiod's body with its own page, or an answer
// over the SDK's size limit, or JSON naming no status chiod sends) comes
// after chiod decided and ran the call.
// The error must be ErrOutcomeUnknown naming the request id — "it may have
// run, retry with the same id or await it" — not a plain error an agent
// would read as "the call failed" and resubmit under a new id.
func TestUnreadableCallAnswerIsOutcomeUnknown(t *testing.T) {
	bodies := map[string]func(orig []byte) []byte{
		"not JSON":       func([]byte) []byte { return []byte("<html><body>OK</body></html>") },
		"unknown status": func([]byte) []byte { return []byte(`{"status":"paused"}`) },
		"empty object":   func([]byte) []byte { return []byte(`{}`) },
		"too large": func(orig []byte) []byte {
			return append(bytes.TrimSpace(orig), bytes.Repeat([]byte(" "), 17<<20)...)
		},
	}
	for name, rewrite := range bodies {
		t.Run(name, func(t *testing.T) {
			target := os.Getenv("CHIO_URL")
			var (
				mu  sync.Mutex
				ids []string
			)
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				req, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
				req.Header = r.Header.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadGateway)
					return
				}
				orig, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if r.Method == http.MethodPost && r.URL.Path == "/v1/calls" {
					var c struct {
						RequestID string `json:"request_id"`
					}
					_ = json.Unmarshal(body, &c)
					mu.Lock()
					ids = append(ids, c.RequestID)
					mu.Unlock()
					orig = rewrite(orig)
				}
				w.WriteHeader(resp.StatusCode)
				w.Write(orig)
			}))
			t.Cleanup(proxy.Close)

			viaProxy, err := chio.NewClient(proxy.URL, chio.WithKeyFile(os.Getenv("CHIO_KEY")), chio.WithCapabilityFile(os.Getenv("CHIO_CAPABILITY")))
			if err != nil {
				t.Fatal(err)
			}
			direct, err := chio.FromEnv()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, callErr := viaProxy.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo", Arguments: map[string]any{"msg": "pay once, " + name}})
			if callErr == nil {
				t.Fatal("no error for an answer the SDK cannot read")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(ids) != 1 {
				t.Fatalf("the proxy saw %d calls, want 1", len(ids))
			}
			res, err := direct.Status(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := res.(*chio.Allowed); !ok || a.Failed() {
				t.Fatalf("the call did not run at chiod: %#v", res)
			}
			var ou *chio.OutcomeUnknownError
			if !errors.Is(callErr, chio.ErrOutcomeUnknown) || !errors.As(callErr, &ou) || ou.RequestID != ids[0] {
				t.Fatalf("call %s ran, yet CallTool's error is not ErrOutcomeUnknown naming it: %v", ids[0], callErr)
			}
			if strings.Contains(callErr.Error(), strings.Repeat(" ", 100)) {
				t.Fatalf("the error carries the answer's body: %.300q", callErr.Error())
			}
		})
	}
}
