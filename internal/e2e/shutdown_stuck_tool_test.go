//go:build unix

package e2e

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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// TestShutdownCutsAStuckToolCallWithAnAnswer: chiod gets SIGTERM while a
// call's tool does not answer (an HTTP tool server that hangs). The grace
// period bounds the shutdown; when it ends, the agent waiting on the call
// must get chiod's answer, a retryable outcome_unknown that says the call
// stays in flight, not a connection cut without an answer (EOF, which
// reads as "chiod unreachable"). The next start on the same data dir
// finishes the call by its delivery mode, once: at_most_once is recorded
// unknown and never sent again; at_least_once is sent again and succeeds.
func TestShutdownCutsAStuckToolCallWithAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		delivery   string
		deliveries int64  // to the tool, over both runs
		execution  string // recorded after the restart
	}{
		{kernel.AtMostOnce, 1, kernel.ExecutionUnknown},
		{kernel.AtLeastOnce, 2, kernel.ExecutionSucceeded},
	} {
		t.Run(tc.delivery, func(t *testing.T) {
			var delivered atomic.Int64
			got := make(chan struct{}, 4)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // then a closed connection ends r.Context()
				n := delivered.Add(1)
				select {
				case got <- struct{}{}:
				default:
				}
				if n == 1 { // stuck: never answers the first delivery
					select {
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"ok":true}`)
			}))
			defer srv.Close()
			defer close(release)
			work := t.TempDir()
			cfg := filepath.Join(work, "chio.toml")
			pol := fmt.Sprintf(`
[[servers]]
id = "tools"
transport = "http"
url = %q
timeout_seconds = 600
[[servers.tools]]
name = "slow"
delivery = %q
[[grants]]
id = "slow"
server = "tools"
tool = "slow"
`, srv.URL, tc.delivery)
			if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(work, "data")
			d := startDaemon(t, cfg, data)
			a := newAgent(t, d, "slow")
			type answer struct {
				code int
				body string
				err  error
			}
			done := make(chan answer, 1)
			body, _ := json.Marshal(a.call(t, "req-stuck", "tools", "slow", `{}`, ""))
			go func() {
				resp, err := http.Post(d.url+"/v1/calls", "application/json", bytes.NewReader(body))
				if err != nil {
					done <- answer{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				done <- answer{resp.StatusCode, string(b), err}
			}()
			select {
			case <-got:
			case <-time.After(30 * time.Second):
				t.Fatal("the call never reached the tool")
			}
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.exited:
			case <-time.After(120 * time.Second):
				t.Fatal("chiod did not stop")
			}
			ans := <-done
			if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"outcome_unknown"`) ||
				!strings.Contains(ans.body, "shutting down") {
				t.Fatalf("the agent waiting on the stuck call got %d %s %v; want chiod's answer: 500 outcome_unknown, shutting down, the call stays in flight", ans.code, ans.body, ans.err)
			}

			d2 := startDaemon(t, cfg, data)
			var st struct {
				Status    string `json:"status"`
				Execution string `json:"execution"`
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				d2.do(t, "GET", "/v1/calls/req-stuck", nil, &st)
				if st.Status != kernel.StatusDispatching || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if st.Status != kernel.StatusAllowed || st.Execution != tc.execution || delivered.Load() != tc.deliveries {
				t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, %s, %d", st.Status, st.Execution, delivered.Load(), tc.execution, tc.deliveries)
			}
		})
	}
}

// TestShutdownCutsAnApprovedCallsStuckToolWithAnAnswer: the approver's
// vote completes the quorum and the approved call's tool hangs when chiod
// gets SIGTERM. The approver's client, waiting on POST .../respond, must
// be told its vote is recorded (500 vote_recorded, the call stays in
// flight because chiod is shutting down), not have its connection cut
// without an answer; the next start finishes the call (at_most_once:
// unknown, never sent again).
func TestShutdownCutsAnApprovedCallsStuckToolWithAnAnswer(t *testing.T) {
	var delivered atomic.Int64
	got := make(chan struct{}, 4)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		select {
		case got <- struct{}{}:
		default:
		}
		select { // stuck
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	work := t.TempDir()
	cfg := filepath.Join(work, "chio.toml")
	pol := fmt.Sprintf(`
[[servers]]
id = "tools"
transport = "http"
url = %q
timeout_seconds = 600
[[servers.tools]]
name = "slow"
delivery = "at_most_once"
[[grants]]
id = "slow"
server = "tools"
tool = "slow"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 3600
[[grants.approval.approvers]]
public_key = "ed25519:392eda50f5c5dd24f3fef6c0f1f44a598b4b6e293b407a39b1d9aa3193b875ed"
display_name = "Finance Lead"
`, srv.URL)
	if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	lead, err := keys.LoadPrivateKey(filepath.Join(repoRoot(), "examples", "keys", "finance-lead.pem"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(work, "data")
	d := startDaemon(t, cfg, data)
	a := newAgent(t, d, "slow")
	_, out, err := postCall(t.Context(), http.DefaultClient, d.url, a.call(t, "req-stuck-approved", "tools", "slow", `{}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	var view struct {
		Request approval.Request `json:"request"`
	}
	if code := d.do(t, "GET", "/approvals/"+out.ApprovalRequestID, nil, &view); code != 200 {
		t.Fatalf("GET /approvals/%s: %d", out.ApprovalRequestID, code)
	}
	tok, err := approval.NewToken(&view.Request, lead.Public(), approval.DecisionApproved, time.Now(), 10*time.Minute).Sign(lead)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]json.RawMessage{"token": tok})
	type answer struct {
		code int
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := http.Post(d.url+"/approvals/"+out.ApprovalRequestID+"/respond", "application/json", bytes.NewReader(body))
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- answer{resp.StatusCode, string(b), err}
	}()
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call never reached the tool")
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(120 * time.Second):
		t.Fatal("chiod did not stop")
	}
	ans := <-done
	if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"vote_recorded"`) ||
		!strings.Contains(ans.body, "shutting down") {
		t.Fatalf("the approver whose vote ran the stuck call got %d %s %v; want chiod's answer: 500 vote_recorded, shutting down", ans.code, ans.body, ans.err)
	}

	d2 := startDaemon(t, cfg, data)
	var st struct {
		Status    string `json:"status"`
		Execution string `json:"execution"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		d2.do(t, "GET", "/v1/calls/req-stuck-approved", nil, &st)
		if st.Status != kernel.StatusDispatching || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Status != kernel.StatusAllowed || st.Execution != kernel.ExecutionUnknown || delivered.Load() != 1 {
		t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, unknown, 1", st.Status, st.Execution, delivered.Load())
	}
}
