package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/kernel"
)

// `chio call` without --request-id generates the id itself. When the
// answer is lost after chiod received (and executed) the call — a dropped
// connection, a proxy that cut the answer — chio call retries with the SAME
// id (the tool runs once) and, if every answer is lost, exits 1 naming that
// id and how to retry or await it: a retry under a new id would run the
// tool a second time.
func TestCallWhoseAnswerIsLostNamesItsRequestID(t *testing.T) {
	w := newApprovalWorld(t)
	capFile := filepath.Join(w.dir, "agent.cap")
	if err := os.WriteFile(capFile, w.capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		sent []string
	)
	// A proxy that forwards the call to the real chiod, lets it run, and
	// then drops the connection instead of relaying the answer.
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var c struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(body, &c)
		mu.Lock()
		sent = append(sent, c.RequestID)
		mu.Unlock()
		req, _ := http.NewRequest(r.Method, w.url+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		panic(http.ErrAbortHandler) // the answer is lost
	}))
	t.Cleanup(proxy.Close)

	env := map[string]string{"CHIO_URL": proxy.URL, "CHIO_KEY": w.key("agent"), "CHIO_CAPABILITY": capFile}
	so, se, code := w.run(env, "call", "demo", "echo", "--args", `{"msg":"pay once"}`)
	mu.Lock()
	defer mu.Unlock()
	if len(sent) == 0 || sent[0] == "" {
		t.Fatalf("proxy saw %q", sent)
	}
	for _, id := range sent {
		if id != sent[0] {
			t.Fatalf("chio call retried under another request id: %q", sent)
		}
	}
	rec, err := w.k.Call(sent[0])
	if err != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("the call did not run at chiod: %v %+v", err, rec)
	}
	if code == cli.ExitOK {
		t.Fatalf("exit 0 for a call whose answer was lost")
	}
	if !strings.Contains(so+se, sent[0]) {
		t.Fatalf("chio call exited %d after chiod executed request %s, but never names that id (stdout %q, stderr %q): "+
			"the caller cannot retry it idempotently with --request-id, and a retry runs the tool again", code, sent[0], so, se)
	}
	if code != cli.ExitError || !strings.Contains(se, "--request-id "+sent[0]) || !strings.Contains(se, "chio await "+sent[0]) {
		t.Fatalf("exit %d, stderr %q; want exit 1 and how to retry (--request-id) or await the call", code, se)
	}
}

// A gateway's 502 (not chiod's error envelope) after forwarding the call is
// a lost answer: chio call asks again under the same request id, and the
// retry gets the call's stored outcome.
func TestCallRetriesAGatewayErrorUnderTheSameRequestID(t *testing.T) {
	var (
		mu  sync.Mutex
		ids []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var c struct {
			RequestID string `json:"request_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&c)
		mu.Lock()
		ids = append(ids, c.RequestID)
		n := len(ids)
		mu.Unlock()
		if n == 1 {
			rw.Header().Set("Content-Type", "text/html")
			rw.WriteHeader(http.StatusBadGateway)
			io.WriteString(rw, "<html><body><h1>502 Bad Gateway</h1></body></html>")
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"status":"allowed","request_id":"`+c.RequestID+`","receipt_id":"rc-1","output":{"refund_id":"rf-1"},"execution":"succeeded"}`)
	}))
	t.Cleanup(srv.Close)
	so, se, code := chio(inflightAgent(t, srv.URL), "call", "demo", "issue_refund", "--args", `{"amount":1}`)
	mu.Lock()
	defer mu.Unlock()
	if code != cli.ExitOK || !strings.Contains(so, "rf-1") || len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("exit %d, stdout %q, stderr %q, ids %q; want exit 0 after one retry under the same id", code, so, se, ids)
	}
}

// An agent's call carries its key-signed proofs, never the operator's
// bearer token, even when CHIO_ADMIN_TOKEN or CHIO_READ_TOKEN is set: the
// POST and the reads that wait for a call found still executing.
func TestCallNeverSendsTheOperatorsToken(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" proof="+fmt.Sprint(r.Header.Get("Chio-Proof") != ""))
		mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		if r.Method == "POST" {
			rw.WriteHeader(http.StatusAccepted)
			io.WriteString(rw, inflightPost)
			return
		}
		io.WriteString(rw, `{"status":"allowed","request_id":"run-42:refund","receipt_id":"rc-1","output":{"ok":true},"execution":"succeeded"}`)
	}))
	t.Cleanup(srv.Close)
	for _, tok := range []string{"CHIO_ADMIN_TOKEN", "CHIO_READ_TOKEN"} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		env := inflightAgent(t, srv.URL)
		env[tok] = "operator-token-0123456789abcdef"
		so, se, code := retryRefund(env)
		mu.Lock()
		got := seen
		mu.Unlock()
		if code != cli.ExitOK || len(got) != 2 {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q, requests %q", tok, code, so, se, got)
		}
		for _, s := range got {
			if strings.Contains(s, "operator-token") {
				t.Fatalf("%s: chio call sent the operator's token: %q", tok, got)
			}
		}
		if !strings.HasSuffix(got[1], "proof=true") {
			t.Fatalf("%s: the wait was not authorized by the agent's proof: %q", tok, got)
		}
	}
}

// A lost answer is remembered across attempts: the first attempt reached a
// gateway that lost chiod's answer (502), and the retry met a refusal that
// asking again will not change (401). The first attempt may have run the
// call, so chio call still exits 1 naming the request id and how to retry
// or await it, not a bare "unauthorized" that invites a new id.
func TestCallLostThenRefusedStillNamesItsRequestID(t *testing.T) {
	var (
		mu  sync.Mutex
		ids []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var c struct {
			RequestID string `json:"request_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&c)
		mu.Lock()
		ids = append(ids, c.RequestID)
		n := len(ids)
		mu.Unlock()
		if n == 1 {
			rw.Header().Set("Content-Type", "text/html")
			rw.WriteHeader(http.StatusBadGateway)
			io.WriteString(rw, "<html><body><h1>502 Bad Gateway</h1></body></html>")
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusUnauthorized)
		io.WriteString(rw, `{"error":"unauthorized","message":"capability expired"}`)
	}))
	t.Cleanup(srv.Close)
	_, se, code := chio(inflightAgent(t, srv.URL), "call", "demo", "issue_refund", "--args", `{"amount":1}`)
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] {
		t.Fatalf("ids %q; want one retry under the same id", ids)
	}
	if code != cli.ExitError || !strings.Contains(se, "request id: "+ids[0]) ||
		!strings.Contains(se, "--request-id "+ids[0]) || !strings.Contains(se, "chio await "+ids[0]) {
		t.Fatalf("exit %d, stderr %q; want exit 1 naming request %s and how to retry or await it", code, se, ids[0])
	}
}
