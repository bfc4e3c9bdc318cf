package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/dispatch"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/sdk/toolserver"
)

// A tool server that anything but chiod can reach could not tell chiod's
// calls from an agent's own: a refund POSTed straight to it skipped every
// guard and approval. chiod now signs each call (server id, time, exact
// body) with the kernel key, and Verifier runs only calls that verify.
// Real parts throughout: chio's own dispatcher sends the call over
// loopback HTTP.
func TestVerifierRunsOnlyCallsChioSigned(t *testing.T) {
	kernelKey := keys.FromSeed([]byte("kernel-kernel-kernel-kernel-32by"))
	var mu sync.Mutex
	var ran []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		ran = append(ran, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"refund":"ok"}`))
	})
	v, err := toolserver.NewVerifier(kernelKey.Public().String(), "payments")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.Wrap(handler))
	defer srv.Close()

	// chio's dispatcher, signing as chiod does.
	now := time.Now()
	router, err := dispatch.New([]policy.Server{{ID: "payments", Transport: "http", URL: srv.URL}}, t.TempDir(),
		dispatch.WithCallSigner(kernelKey.SignRaw, func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer router.Close()
	var sent struct {
		header http.Header
		body   []byte
	}
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.header = r.Header.Clone()
		sent.body, _ = io.ReadAll(r.Body)
		v.Wrap(handler).ServeHTTP(w, r.Clone(r.Context()))
	}))
	defer capture.Close()
	res, err := router.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "req-1", Server: "payments", Tool: "issue_refund",
		Arguments: json.RawMessage(`{"amount":450,"currency":"USD"}`), Attempt: 1})
	if err != nil || res.ToolError != "" || string(res.Output) != `{"refund":"ok"}` {
		t.Fatalf("chio's signed call: %+v %v", res, err)
	}
	mu.Lock()
	if len(ran) != 1 {
		t.Fatalf("the handler ran %d times for chio's call, want 1", len(ran))
	}
	ran = nil
	mu.Unlock()

	// Capture what chio sends, to forge around it.
	capRouter, err := dispatch.New([]policy.Server{{ID: "payments", Transport: "http", URL: capture.URL}}, t.TempDir(),
		dispatch.WithCallSigner(kernelKey.SignRaw, func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer capRouter.Close()
	if _, err := capRouter.Dispatch(context.Background(), kernel.DispatchRequest{RequestID: "req-2", Server: "payments", Tool: "issue_refund",
		Arguments: json.RawMessage(`{"amount":5,"currency":"USD"}`), Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	ran = nil
	mu.Unlock()

	post := func(body []byte, h http.Header) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		for k, vs := range h {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tampered := bytes.Replace(sent.body, []byte(`"amount":5`), []byte(`"amount":500000`), 1)
	otherKey := keys.FromSeed([]byte("forger-forger-forger-forger-32by"))
	cases := map[string]func() (int, string){
		"no signature (an agent calling the tool directly)": func() (int, string) {
			return post(sent.body, http.Header{"Idempotency-Key": {"req-x"}}), "any"
		},
		"chio's headers over a changed body": func() (int, string) { return post(tampered, sent.header), "" },
		"another server's id": func() (int, string) {
			w, _ := toolserver.NewVerifier(kernelKey.Public().String(), "ledger")
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent.body))
			r.Header = sent.header.Clone()
			w.Wrap(handler).ServeHTTP(rec, r)
			return rec.Code, ""
		},
		"signed by another key": func() (int, string) {
			w, _ := toolserver.NewVerifier(otherKey.Public().String(), "payments")
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent.body))
			r.Header = sent.header.Clone()
			w.Wrap(handler).ServeHTTP(rec, r)
			return rec.Code, ""
		},
		"replayed after MaxAge": func() (int, string) {
			w, _ := toolserver.NewVerifier(kernelKey.Public().String(), "payments")
			w.Now = func() time.Time { return now.Add(toolserver.DefaultMaxAge + time.Second) }
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent.body))
			r.Header = sent.header.Clone()
			w.Wrap(handler).ServeHTTP(rec, r)
			return rec.Code, ""
		},
	}
	for name, c := range cases {
		if code, _ := c(); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 0 {
		t.Fatalf("the handler ran calls chio did not sign: %s", strings.Join(ran, "; "))
	}
}
