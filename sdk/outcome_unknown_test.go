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
	"sync"
	"testing"

	chio "github.com/chiokernel/chio/sdk"
)

// ErrUnavailable means "chiod could not decide; nothing was allowed". A
// reverse proxy's 502 Bad Gateway / 504 Gateway Timeout comes after it
// forwarded the call and lost chiod's answer: the call was decided and its
// tool ran. The error must not match ErrUnavailable (an agent trusting it
// would submit the step again under a fresh id and pay twice) but
// ErrOutcomeUnknown, naming the request id to retry or await.
func TestGatewayErrorAfterTheCallRanIsOutcomeUnknownNotUnavailable(t *testing.T) {
	target := os.Getenv("CHIO_URL")
	var (
		mu  sync.Mutex
		ids []string
	)
	// nginx in front of chiod: forwards the call, then its upstream read
	// fails and it answers 502 with its own HTML page.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v1/calls" {
			var c struct {
				RequestID string `json:"request_id"`
			}
			_ = json.Unmarshal(body, &c)
			mu.Lock()
			ids = append(ids, c.RequestID)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
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
	_, callErr := viaProxy.CallTool(ctx, chio.Call{Server: "demo", Tool: "echo", Arguments: map[string]any{"msg": "pay once"}})
	if callErr == nil {
		t.Fatal("no error through a proxy answering 502")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("the proxy saw no call")
	}
	res, err := direct.Status(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	a, ok := res.(*chio.Allowed)
	if !ok || a.Failed() {
		t.Fatalf("the call did not run at chiod: %#v", res)
	}
	if errors.Is(callErr, chio.ErrUnavailable) {
		t.Fatalf("call %s was allowed and its tool ran (output %s), yet CallTool's error matches ErrUnavailable, "+
			"documented as \"chiod could not decide (503); nothing was allowed\": %v", ids[0], a.Output, callErr)
	}
	var ou *chio.OutcomeUnknownError
	if !errors.Is(callErr, chio.ErrOutcomeUnknown) || !errors.As(callErr, &ou) || ou.RequestID != ids[0] {
		t.Fatalf("CallTool's error %v is not ErrOutcomeUnknown naming request %s", callErr, ids[0])
	}
}
