//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
			tool := newStuckTool(t, true) // never answers the first delivery
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
`, tool.URL, tc.delivery)
			if err := os.WriteFile(cfg, []byte(pol), 0o644); err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(work, "data")
			d := startDaemon(t, cfg, data)
			a := newAgent(t, d, "slow")
			body, _ := json.Marshal(a.call(t, "req-stuck", "tools", "slow", `{}`, ""))
			done := postAsync(d.url+"/v1/calls", body)
			tool.waitReached(t, "the call")
			stopBySIGTERM(t, d)
			ans := <-done
			if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"outcome_unknown"`) ||
				!strings.Contains(ans.body, "shutting down") {
				t.Fatalf("the agent waiting on the stuck call got %d %s %v; want chiod's answer: 500 outcome_unknown, shutting down, the call stays in flight", ans.code, ans.body, ans.err)
			}

			status, execution := callEnd(t, startDaemon(t, cfg, data), "req-stuck")
			if status != kernel.StatusAllowed || execution != tc.execution || tool.delivered.Load() != tc.deliveries {
				t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, %s, %d", status, execution, tool.delivered.Load(), tc.execution, tc.deliveries)
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
	tool := newStuckTool(t, false)
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
`, tool.URL)
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
	done := postAsync(d.url+"/approvals/"+out.ApprovalRequestID+"/respond", body)
	tool.waitReached(t, "the approved call")
	stopBySIGTERM(t, d)
	ans := <-done
	if ans.err != nil || ans.code != http.StatusInternalServerError || !strings.Contains(ans.body, `"error":"vote_recorded"`) ||
		!strings.Contains(ans.body, "shutting down") {
		t.Fatalf("the approver whose vote ran the stuck call got %d %s %v; want chiod's answer: 500 vote_recorded, shutting down", ans.code, ans.body, ans.err)
	}

	status, execution := callEnd(t, startDaemon(t, cfg, data), "req-stuck-approved")
	if status != kernel.StatusAllowed || execution != kernel.ExecutionUnknown || tool.delivered.Load() != 1 {
		t.Fatalf("after the restart: status %q execution %q, %d deliveries; want allowed, unknown, 1", status, execution, tool.delivered.Load())
	}
}
