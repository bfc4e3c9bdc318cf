package cli_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chiokernel/chio/internal/cli"
)

// `chio call --request-id ID` is the documented idempotent retry
// (docs/agent-developer.md, "Idempotent retries (CLI and HTTP)"). When the
// retry meets its call still running, chiod answers 202 {"status":
// "dispatching"} with no approval id (httpapi.StatusFor; kernel/retry.go).
// That is not a pending approval: the CLI waits for the call to settle and
// exits as for a fresh call.

// inflightChiod answers POST /v1/calls with post, and GET /v1/calls/ID with
// the answers in turn (the last one repeated); it counts the GETs and records
// whether each was authorized.
func inflightChiod(t *testing.T, post string, gets ...string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/calls":
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte(post))
		case r.Method == "GET" && r.URL.Path == "/v1/calls/run-42:refund" && len(gets) > 0:
			if r.Header.Get("Chio-Proof") == "" || r.URL.Query().Get("wait") == "" {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"error":"unauthorized","message":"no proof or no wait"}`))
				return
			}
			i := int(n.Add(1)) - 1
			w.Write([]byte(gets[min(i, len(gets)-1)]))
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"not_found","message":"no route"}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func inflightAgent(t *testing.T, url string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.pem")
	pub, se, code := chio(nil, "keygen", "--out", key)
	if code != 0 {
		t.Fatalf("keygen: %d %s", code, se)
	}
	capFile := filepath.Join(dir, "agent.cap")
	if err := os.WriteFile(capFile, []byte(`{"id":"cap-1","subject":"`+strings.TrimSpace(pub)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"CHIO_URL": url, "CHIO_KEY": key, "CHIO_CAPABILITY": capFile}
}

func retryRefund(env map[string]string, extra ...string) (string, string, int) {
	return chio(env, append([]string{"call", "demo", "issue_refund", "--args", `{"amount":1}`, "--request-id", "run-42:refund"}, extra...)...)
}

const inflightPost = `{"status":"dispatching","request_id":"run-42:refund","receipt_id":"rc-1"}`

func TestCallRetryMeetingItsCallInFlightWaitsForTheOutput(t *testing.T) {
	srv, gets := inflightChiod(t, inflightPost,
		`{"status":"dispatching","request_id":"run-42:refund","receipt_id":"rc-1"}`,
		`{"status":"allowed","request_id":"run-42:refund","receipt_id":"rc-1","output":{"refund_id":"rf-1"},"execution":"succeeded"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code == cli.ExitPending {
		t.Fatalf("a retry that met its (non-HITL) call in flight exited 3 'pending approval' with approval id %q on stdout\nstderr: %s",
			strings.TrimSpace(so), se)
	}
	if code != cli.ExitOK || !strings.Contains(so, "rf-1") || strings.Contains(so, "denied") || gets.Load() != 2 {
		t.Fatalf("exit %d, stdout %q, stderr %q, %d polls; want exit 0 and the call's output after 2 polls", code, so, se, gets.Load())
	}
}

func TestCallRetryMeetingItsCallInFlightReportsTheToolFailure(t *testing.T) {
	srv, _ := inflightChiod(t, inflightPost,
		`{"status":"allowed","request_id":"run-42:refund","receipt_id":"rc-1","tool_error":"gateway down","execution":"failed"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code != cli.ExitToolFailed || !strings.Contains(se, "the tool failed: gateway down") || strings.Contains(so, "denied") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 6 and the tool error", code, so, se)
	}
}

func TestCallRetryMeetingItsCallInFlightThenDeniedExitsDenied(t *testing.T) {
	srv, _ := inflightChiod(t, inflightPost,
		`{"status":"denied","request_id":"run-42:refund","receipt_id":"rc-2","guard":"hitl","reason":"deadline passed"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code != cli.ExitDenied || !strings.Contains(so, "denied by hitl: deadline passed") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 4 'denied by hitl'", code, so, se)
	}
}

func TestCallRetryMeetingItsCallInFlightPrintsTheSettledOutcomeAsJSON(t *testing.T) {
	srv, _ := inflightChiod(t, inflightPost,
		`{"status":"allowed","request_id":"run-42:refund","receipt_id":"rc-1","output":{"refund_id":"rf-1"},"execution":"succeeded"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL), "--output", "json")
	if code != cli.ExitOK || !strings.Contains(so, `"status": "allowed"`) || strings.Contains(so, "dispatching") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and the settled outcome", code, so, se)
	}
}

func TestCallApprovedAndStillExecutingIsAwaitedByItsApprovalID(t *testing.T) {
	srv, _ := inflightChiod(t, `{"status":"dispatching","request_id":"run-42:refund","receipt_id":"rc-1","approval_request_id":"ar-7"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code != cli.ExitPending || strings.TrimSpace(so) != "ar-7" || strings.Contains(so+se, "denied") || !strings.Contains(se, "chio await ar-7") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 3, the approval id, and how to await it", code, so, se)
	}
}

func TestCallWithAnUnknownStatusIsAnErrorNotADenialOrSuccess(t *testing.T) {
	for _, body := range []string{
		`{"status":"settling","request_id":"run-42:refund"}`,
		`{"status":"","request_id":"run-42:refund"}`,
		`{"status":"dispatching","request_id":"run-42:refund"}`, // and every poll fails
	} {
		srv, _ := inflightChiod(t, body)
		so, se, code := retryRefund(inflightAgent(t, srv.URL))
		if code == cli.ExitOK || code == cli.ExitPending || code == cli.ExitDenied || strings.Contains(so+se, "denied by") {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want an error", body, code, so, se)
		}
	}
}

// chio call printed "allowed, but the tool failed: outcome unknown: …" for
// a call that may have run: the script's author reads a failure.
func TestCallWhoseOutcomeIsUnknownDoesNotSayTheToolFailed(t *testing.T) {
	srv, _ := inflightChiod(t, inflightPost,
		`{"status":"allowed","request_id":"run-42:refund","receipt_id":"rc-1","tool_error":"outcome unknown: connection reset","execution":"unknown"}`)
	so, se, code := retryRefund(inflightAgent(t, srv.URL))
	if code != cli.ExitToolFailed || strings.Contains(se, "the tool failed") || !strings.Contains(se, "allowed, but its outcome is unknown: the tool may have run it") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 6 saying the outcome is unknown", code, so, se)
	}
}
