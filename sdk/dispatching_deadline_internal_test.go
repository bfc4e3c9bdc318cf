package chio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/testkit"
)

// CallTool meets a call chiod allowed and is still running (a retry's
// 202 "dispatching") and waits for its outcome with Await. When the
// caller's deadline ends that wait, the call was allowed and its tool is
// running: it MAY HAVE RUN. The error must be ErrOutcomeUnknown naming the
// request id, not ErrTimedOut ("the wait ended before a decision" — the
// decision was made) read as "not approved, nothing ran".
func TestDispatchingCallOutlivingTheContextIsOutcomeUnknown(t *testing.T) {
	tool := &slowTool{delay: 3 * time.Second} // a deploy in progress
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: lostOutcomePolicy, Dispatcher: tool, Serve: true,
		Server: "pay", Grants: []string{"deploys"}})
	// A proxy that hands the call to chiod and, without waiting for its
	// answer, answers as chiod answers a retry meeting the call in flight.
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, w.URL+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		if r.Method == http.MethodPost && r.URL.Path == "/v1/calls" {
			go func() {
				if resp, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			time.Sleep(200 * time.Millisecond) // chiod has taken it
			rw.WriteHeader(http.StatusAccepted)
			io.WriteString(rw, `{"status":"dispatching","request_id":"run-8:deploy"}`)
			return
		}
		resp, err := http.DefaultClient.Do(req.WithContext(r.Context()))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	c, err := NewClient(proxy.URL, WithKey(w.Agent), WithCapability(w.CapRaw))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, Call{Server: "pay", Tool: "echo", RequestID: "run-8:deploy"})
	time.Sleep(tool.delay) // let the deploy finish before the world closes
	if tool.runs() != 1 {
		t.Fatalf("the deploy ran %d times, want 1", tool.runs())
	}
	var ou *OutcomeUnknownError
	if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrTimedOut) || !errors.As(err, &ou) || ou.RequestID != "run-8:deploy" {
		t.Fatalf("the deploy was allowed and ran, yet CallTool returned %#v, %v (ErrTimedOut=%v, ErrOutcomeUnknown=%v)",
			res, err, errors.Is(err, ErrTimedOut), errors.Is(err, ErrOutcomeUnknown))
	}
}
