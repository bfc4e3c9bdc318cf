package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
	chio "github.com/chiokernel/chio/sdk"
)

// crashPolicy: %[1]s is the tool server's URL, %[2]s the approver key.
const crashPolicy = `
[receipts]
checkpoint_every = 200
checkpoint_interval_seconds = 1

[[servers]]
id = "tools"
transport = "http"
url = "%[1]s"
timeout_seconds = 2
retry_deadline_seconds = 5
[[servers.tools]]
name = "pay"
[[servers.tools]]
name = "once"
delivery = "at_most_once"
[[servers.tools]]
name = "approve_me"
[[servers.tools]]
name = "deadline_deny"
[[servers.tools]]
name = "deadline_auto"

[[grants]]
id = "pay"
server = "tools"
tool = "pay"
[grants.constraints]
forbidden_paths = ["/etc/**"]

[[grants]]
id = "once"
server = "tools"
tool = "once"

[[grants]]
id = "asked"
server = "tools"
tool = "approve_me"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Approver"

[[grants]]
id = "timed"
server = "tools"
tool = "deadline_deny"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 1
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Approver"

[[grants]]
id = "advisory"
server = "tools"
tool = "deadline_auto"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 1
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Approver"
`

// crashLedger is what the agents were told before each kill.
type crashLedger struct {
	mu        sync.Mutex
	receipts  map[string]string // acknowledged receipt id → request id
	parked    map[string]string // acknowledged approval id → request id
	requests  map[string]string // every acknowledged request id → tool
	outputs   map[string]string // request id → output the agent was told it succeeded with
	approvals atomic.Int64
}

func newCrashLedger() *crashLedger {
	return &crashLedger{receipts: map[string]string{}, parked: map[string]string{}, requests: map[string]string{}, outputs: map[string]string{}}
}

func (l *crashLedger) ack(tool string, out *kernel.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests[out.RequestID] = tool
	if out.ReceiptID != "" {
		l.receipts[out.ReceiptID] = out.RequestID
	}
	if out.ApprovalRequestID != "" {
		l.parked[out.ApprovalRequestID] = out.RequestID
	}
	if out.Execution == kernel.ExecutionSucceeded {
		l.outputs[out.RequestID] = string(out.Output)
	}
}

// TestCrashLoop is issue 11's harness: CHIO_CRASH_CYCLES (default 20)
// cycles of kill -9 under mixed load — allows, denies, at_most_once calls,
// parks, approvals, deadlines denying and auto-approving — against a
// deduplicating tool server that counts deliveries and effects. After the
// last restart: no effect without a durable allow decision, no double
// execution, no acknowledged receipt or parked approval lost, every call
// settled, and `chio receipt verify --all` clean. Run it at full size with
// CHIO_CRASH_CYCLES=100 go test -run TestCrashLoop -timeout 30m ./internal/e2e/
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 loop; run without -short")
	}
	cycles := 20
	if v, err := strconv.Atoi(os.Getenv("CHIO_CRASH_CYCLES")); err == nil && v > 0 {
		cycles = v
	}
	tool := newCountingTool(t, "once")
	approver, _ := keys.Generate(nil)
	work := t.TempDir()
	config := filepath.Join(work, "crash.toml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(crashPolicy, tool.url, approver.Public())), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(work, "data")
	d := startDaemon(t, config, dataDir)
	a := newAgent(t, d, "pay", "once", "asked", "timed", "advisory")
	l := newCrashLedger()
	var seq atomic.Int64
	kills := 0
	for cycle := 0; cycle < cycles; cycle++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				crashWorker(ctx, t, d, a, approver, l, &seq, w)
			}(w)
		}
		time.Sleep(time.Duration(150+rand.IntN(600)) * time.Millisecond)
		d.kill9()
		kills++
		cancel()
		wg.Wait()
		d = startDaemon(t, config, dataDir)
	}
	settle(t, d, l)
	checkCrashInvariants(t, d, tool, l)
	t.Logf("%d kill -9 cycles; %d receipts and %d parked approvals acknowledged, %d approvals presented",
		kills, len(l.receipts), len(l.parked), l.approvals.Load())
}

// crashWorker sends a mix of calls until ctx ends (the kill).
func crashWorker(ctx context.Context, t *testing.T, d *daemon, a *agent, approver keys.PrivateKey, l *crashLedger, seq *atomic.Int64, w int) {
	client := &http.Client{Timeout: 5 * time.Second}
	for ctx.Err() == nil {
		id := fmt.Sprintf("crash-%d-%d", w, seq.Add(1))
		var tool, args string
		switch r := rand.IntN(100); {
		case r < 45:
			tool, args = "pay", fmt.Sprintf(`{"amount":%d}`, rand.IntN(1000))
		case r < 60:
			tool, args = "once", `{"note":"at most once"}`
		case r < 70:
			tool, args = "pay", `{"path":"/etc/shadow"}` // denied by forbidden_paths
		case r < 85:
			tool, args = "approve_me", `{"x":1}`
		case r < 93:
			tool, args = "deadline_deny", `{"x":1}`
		default:
			tool, args = "deadline_auto", `{"x":1}`
		}
		code, out, err := postCall(ctx, client, d.url, a.call(t, id, "tools", tool, args, ""))
		if err != nil || (code != 200 && code != 202 && code != 403) || out.Status == "" {
			continue // in flight at the kill, or 503: not acknowledged
		}
		l.ack(tool, out)
		if tool == "approve_me" && out.ApprovalRequestID != "" && rand.IntN(2) == 0 {
			approve(ctx, d, out.ApprovalRequestID, approver, l)
		}
	}
}

// approve signs and presents a token for a parked call, as an approver's
// channel would; the kill may cut it off anywhere.
func approve(ctx context.Context, d *daemon, id string, approver keys.PrivateKey, l *crashLedger) {
	c, err := chio.NewClient(d.url, chio.WithBearer(d.token))
	if err != nil {
		return
	}
	req, err := c.Approval(ctx, id)
	if err != nil {
		return
	}
	tok, err := chio.SignApproval(req, approver)
	if err != nil {
		return
	}
	l.approvals.Add(1)
	_, _ = c.Respond(ctx, id, tok)
}

// settle waits until recovery is done and no acknowledged call is in
// flight (deadlines of one second fire meanwhile).
func settle(t *testing.T, d *daemon, l *crashLedger) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var rd struct {
			Status   string `json:"status"`
			Recovery struct {
				InFlight int `json:"in_flight"`
			} `json:"recovery"`
		}
		code := d.do(t, "GET", "/readyz", nil, &rd)
		inflight := 0
		l.mu.Lock()
		ids := make([]string, 0, len(l.requests))
		for id, tool := range l.requests {
			if tool != "approve_me" { // those may wait for a human for good
				ids = append(ids, id)
			}
		}
		l.mu.Unlock()
		for _, id := range ids {
			var st kernel.Outcome
			if d.do(t, "GET", "/v1/calls/"+id, nil, &st) == 200 && (st.Status == kernel.StatusDispatching || st.Status == kernel.StatusPendingApproval) {
				inflight++
			}
		}
		if code == 200 && rd.Recovery.InFlight == 0 && inflight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after 60 s: readyz %d %+v, %d calls in flight\n%s", code, rd, inflight, d.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func checkCrashInvariants(t *testing.T, d *daemon, tool *countingTool, l *crashLedger) {
	t.Helper()
	deliveries, effects := tool.snapshot()
	resent, once := 0, 0
	for key, n := range effects {
		// No effect without a durable allow decision.
		var st struct {
			kernel.Outcome
			DecisionReceiptID string `json:"decision_receipt_id"`
		}
		if code := d.do(t, "GET", "/v1/calls/"+key, nil, &st); code != 200 || st.Status != kernel.StatusAllowed {
			t.Errorf("effect for %s with no durable allow decision (status %d %q)", key, code, st.Status)
		}
		// No double execution.
		if n != 1 {
			t.Errorf("%s executed %d times", key, n)
		}
		if deliveries[key] > 1 {
			resent++
		}
		if strings.HasPrefix(st.Outcome.ReceiptID, "rc-") && st.Execution == "" {
			t.Errorf("%s allowed but never settled", key)
		}
	}
	// at_most_once calls are never delivered twice (they have no dedupe).
	l.mu.Lock()
	for id, toolName := range l.requests {
		if toolName == "once" {
			once++
			if deliveries[id] > 1 {
				t.Errorf("at_most_once call %s delivered %d times", id, deliveries[id])
			}
		}
	}
	receipts := make(map[string]string, len(l.receipts))
	for k, v := range l.receipts {
		receipts[k] = v
	}
	parked := make(map[string]string, len(l.parked))
	for k, v := range l.parked {
		parked[k] = v
	}
	outputs := make(map[string]string, len(l.outputs))
	for k, v := range l.outputs {
		outputs[k] = v
	}
	l.mu.Unlock()
	// What an agent was told succeeded is what the record says, also when
	// it was answered before its settle commit and the kill came between.
	for id, told := range outputs {
		var st kernel.Outcome
		if code := d.do(t, "GET", "/v1/calls/"+id, nil, &st); code != 200 || st.Execution != kernel.ExecutionSucceeded || string(st.Output) != told {
			t.Errorf("%s: the agent was told %s; the record says %d %q %s", id, told, code, st.Execution, st.Output)
		}
	}
	// Nothing acknowledged is lost.
	for id := range receipts {
		if code := d.do(t, "GET", "/v1/receipts/"+id, nil, &json.RawMessage{}); code != 200 {
			t.Errorf("acknowledged receipt %s lost (%d)", id, code)
		}
	}
	for id := range parked {
		var v struct {
			Status string `json:"status"`
		}
		if code := d.do(t, "GET", "/approvals/"+id, nil, &v); code != 200 || v.Status == "" {
			t.Errorf("acknowledged approval %s lost (%d)", id, code)
		}
	}
	// Every signature, chain and checkpoint verifies.
	out, errOut, code := d.chio(t, t.TempDir(), "receipt", "verify", "--all")
	if code != 0 {
		t.Errorf("chio receipt verify --all: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("%d effects, %d of them delivered more than once and deduplicated by the tool server; %d at_most_once calls; %d successes' outputs match what the agent was told",
		len(effects), resent, once, len(outputs))
	_ = approval.StatusPending
}
