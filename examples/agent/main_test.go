package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chiokernel/chio/internal/keys"
)

// runAgent runs this example (main, in a child process of the test binary)
// against a chiod that answers POST /v1/calls with call, and a wait with
// awaited; it returns what the agent printed. The answers name the call
// "req-1": the agent's own request id is put in its place, as chiod's
// answers name the call asked about (the SDK refuses another call's).
func runAgent(t *testing.T, call, awaited string) string {
	t.Helper()
	var mu sync.Mutex
	requestID := "req-1"
	named := func(answer string) []byte {
		mu.Lock()
		defer mu.Unlock()
		return []byte(strings.ReplaceAll(answer, `"req-1"`, strconv.Quote(requestID)))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/calls":
			var sent struct {
				RequestID string `json:"request_id"`
			}
			_ = json.NewDecoder(r.Body).Decode(&sent)
			mu.Lock()
			requestID = sent.RequestID
			mu.Unlock()
			// The HTTP status chiod answers the outcome with: the SDK
			// reads one that disagrees with the body as outcome unknown.
			status := http.StatusAccepted
			if strings.Contains(call, `"status":"allowed"`) {
				status = http.StatusOK
			}
			w.WriteHeader(status)
			_, _ = w.Write(named(call))
		case r.URL.Path == "/approvals/ar-1":
			_, _ = w.Write(named(`{"request":{"request_id":"req-1","approval_id":"ar-1","expires_at":1900000000}}`))
		case strings.HasPrefix(r.URL.Path, "/v1/calls/"):
			_, _ = w.Write(named(awaited))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	k := keys.FromSeed(make([]byte, 32))
	keyFile, capFile := filepath.Join(dir, "agent.pem"), filepath.Join(dir, "agent.cap")
	if err := keys.WritePrivateKey(keyFile, k); err != nil {
		t.Fatal(err)
	}
	capRaw, _ := json.Marshal(map[string]any{"id": "cap-1", "subject": k.Public().String()})
	if err := os.WriteFile(capFile, capRaw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CHIO_EXAMPLE_AGENT_CHILD=1", "CHIO_URL="+srv.URL, "CHIO_KEY="+keyFile, "CHIO_CAPABILITY="+capFile)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	return string(out)
}

// TestMain runs the agent itself when runAgent starts this binary.
func TestMain(m *testing.M) {
	if os.Getenv("CHIO_EXAMPLE_AGENT_CHILD") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The example is what docs/agent-developer.md points Go developers to. An
// allowed refund whose tool failed, never received it, or may have run it
// is not "refund issued"; one a human amended says it ran with the
// approver's arguments. Before, it printed "refund issued" for all of
// these: a refund that may have run read as done, and one of 300 as the
// 450 the agent asked for.
func TestAgentSaysWhatBecameOfTheRefund(t *testing.T) {
	const pending = `{"status":"pending_approval","request_id":"req-1","approval_request_id":"ar-1","deadline":1900000000}`
	for name, tc := range map[string]struct{ call, awaited, want string }{
		"unknown": {call: `{"status":"allowed","request_id":"req-1","execution":"unknown","tool_error":"outcome unknown: connection reset"}`,
			want: "may have run"},
		"tool error": {call: `{"status":"allowed","request_id":"req-1","execution":"tool_error","tool_error":"card declined"}`,
			want: "card declined"},
		"approved, unknown": {call: pending,
			awaited: `{"status":"allowed","request_id":"req-1","approval_request_id":"ar-1","execution":"unknown","tool_error":"outcome unknown: reset"}`,
			want:    "may have run"},
		"approved, amended": {call: pending,
			awaited: `{"status":"allowed","request_id":"req-1","approval_request_id":"ar-1","execution":"succeeded","output":{"refund_id":"rf-1"},` +
				`"approval":{"approver":"ed25519:abc","amended":true,"amended_arguments":{"amount":300,"currency":"USD","customer_id":"cust-9012"}}}`,
			want: `"amount":300`},
	} {
		out := runAgent(t, tc.call, tc.awaited)
		if !strings.Contains(out, tc.want) || tc.want != `"amount":300` && strings.Contains(out, "refund issued") {
			t.Errorf("%s: the agent printed\n%s\nwant it to say %q (and not that the refund was issued when it may not have been)", name, out, tc.want)
		}
	}
}
