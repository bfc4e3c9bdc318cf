package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/boltstore"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

var (
	financeLead = keys.FromSeed([]byte("finance-lead-finance-lead-32byte"))
	cfo         = keys.FromSeed([]byte("cfo-cfo-cfo-cfo-cfo-cfo-cfo-cfo-"))
	sre         = keys.FromSeed([]byte("sre-sre-sre-sre-sre-sre-sre-sre-"))
	outsider    = keys.FromSeed([]byte("outsider-outsider-outsider-32byt"))
	agentK      = keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))
)

// lifecyclePolicy exercises every approval feature; %s are keys.
const lifecyclePolicy = `
[kernel]
public_url = "http://127.0.0.1:7420"

[[servers]]
id = "demo"
transport = "builtin"
[[servers.tools]]
name = "issue_refund"
action = "charge"
amount = "/amount"
currency = "/currency"

[[grants]]
id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }
governed_intent_required = true
[grants.approval]
timeout_seconds = 600
timeout_action = "%[6]s"
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "%[5]s"
display_name = "Agent Itself"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead", "Agent Itself"]
timeout_seconds = 900
[[grants.approval.escalation.tiers]]
approvers = ["CFO"]
timeout_seconds = 3600

[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
forbidden_paths = ["/etc/**"]
[grants.approval]
quorum = 2
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "CFO"
[[grants.approval.approvers]]
public_key = "%[3]s"
display_name = "SRE"

[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
forbidden_paths = ["/etc/**"]
[grants.approval]
expose_arguments = true
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`

type lf struct {
	*fixture
	policyText string
}

func lifecycle(t *testing.T, timeoutAction string) *lf { return lifecycleOn(t, timeoutAction, nil) }

// lifecycleOn is lifecycle whose kernel reads the fake clock through wrap
// and uses its store through wrapStore, if given.
func lifecycleOn(t *testing.T, timeoutAction string, wrap func(*clock.Fake) clock.Clock, wrapStore ...func(kernel.Store) kernel.Store) *lf {
	t.Helper()
	f := newFixtureOn(t, wrap, wrapStore...)
	text := fmt.Sprintf(lifecyclePolicy, financeLead.Public(), cfo.Public(), sre.Public(), outsider.Public(), agentK.Public(), timeoutAction)
	if timeoutAction != policy.TimeoutEscalate {
		// Escalation tiers apply only when escalating (policy refuses them
		// otherwise): cut the refunds grant's escalation table.
		head, rest, _ := strings.Cut(text, "[grants.approval.escalation]")
		_, tail, _ := strings.Cut(rest, "\n[[grants]]")
		text = head + "[[grants]]" + tail
	}
	p, err := policy.Parse([]byte(text), "lifecycle.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.agent = agentK
	f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), []string{"refunds", "deploys", "files"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &lf{fixture: f, policyText: text}
}

func (f *lf) refund(t *testing.T, amount int) *kernel.Outcome {
	t.Helper()
	out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund",
		fmt.Sprintf(`{"customer_id":"cust-9012","amount":%d,"currency":"USD"}`, amount),
		fmt.Sprintf(`{"purpose":"refund order #8834","max_amount":{"units":%d,"currency":"USD"}}`, amount)))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("refund: %+v %v", out, err)
	}
	return out
}

func (f *lf) token(t *testing.T, id string, k keys.PrivateKey, decision string, mutate func(*approval.Token)) []byte {
	t.Helper()
	return testkit.SignToken(t, f.k, f.clock.Now(), id, k, decision, mutate)
}

// eventually waits for cond. Its bound only ends a failing test: under
// -race beside other packages' fsyncs a commit can take seconds (2.5 s was
// too short: TestDeadlineFiresAtItsTimeWhenArmedLate and
// TestEscalationTiersThenTerminalDeny each timed out once so).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestApproveExecutesOnceWithChainedReceipts(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	f.clock.Advance(2 * time.Minute)
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved",
		func(tk *approval.Token) { tk.Note = "customer verified" }), "approved", "slack")
	if err != nil || res.Outcome != "approved" {
		t.Fatalf("%+v %v", res, err)
	}
	if n := f.disp.count(out.RequestID); n != 1 {
		t.Fatalf("dispatched %d", n)
	}
	first := f.receipt(t, out.ReceiptID)
	final := f.receipt(t, res.ReceiptID)
	if first.Decision.Verdict != receipt.Incomplete || final.Decision.Verdict != receipt.Allow {
		t.Fatalf("chain verdicts %s → %s", first.Decision.Verdict, final.Decision.Verdict)
	}
	m := final.Metadata
	want := map[string]any{"previous_receipt_id": first.ID, "approval_request_id": out.ApprovalRequestID,
		"approver": financeLead.Public().String(), "approver_display_name": "Finance Lead", "channel": "slack",
		"note": "customer verified"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("metadata %s = %v, want %v", k, m[k], v)
		}
	}
	if m["approval_latency_ms"] != json.Number("120000") || m["approval_token_id"] == nil {
		t.Errorf("latency/token metadata: %v", m)
	}
	rec, _ := f.k.Call(out.RequestID)
	if rec.Status != kernel.StatusAllowed || string(rec.Output) != `{"ok":true}` {
		t.Fatalf("call record %+v", rec)
	}
}

func TestRetryOfParkedCallAnswersTheSame(t *testing.T) {
	f := lifecycle(t, "deny")
	call := f.call(t, "issue_refund", `{"customer_id":"c","amount":450,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`)
	first, err := f.k.Submit(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.k.Submit(context.Background(), call)
	if err != nil || again.Deadline != first.Deadline || again.Summary != first.Summary || again.ApprovalRequestID != first.ApprovalRequestID || again.ReceiptID != first.ReceiptID || again.Status != first.Status {
		t.Fatalf("retry answered %+v, first %+v (%v)", again, first, err)
	}
}

func TestHumanDenial(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "denied",
		func(tk *approval.Token) { tk.Note = "duplicate refund" }), "", "")
	if err != nil || res.Outcome != "denied" {
		t.Fatalf("%+v %v", res, err)
	}
	r := f.receipt(t, res.ReceiptID)
	if r.Decision.Guard != kernel.GuardHumanApproval || r.Decision.Reason != "duplicate refund" || r.Metadata["previous_receipt_id"] != out.ReceiptID {
		t.Fatalf("deny receipt %+v", r)
	}
	if f.disp.count(out.RequestID) != 0 {
		t.Fatal("denied call was dispatched")
	}
}

func TestReplaySequentialAndAfterResolution(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", nil)
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	// A fresh token for the resolved request is a conflict, not a second run.
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, cfo, "approved", nil), "", ""); !errors.Is(err, kernel.ErrConflict) {
		t.Fatalf("after resolution: %v", err)
	}
	if f.disp.count(out.RequestID) != 1 {
		t.Fatal("dispatched more than once")
	}
}

func TestReplay100Concurrent(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", nil)
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "")
		}(i)
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, approval.ErrReplay), errors.Is(err, kernel.ErrConflict):
		default:
			t.Errorf("unexpected: %v", err)
		}
	}
	if ok != 1 || f.disp.count(out.RequestID) != 1 {
		t.Fatalf("%d successes, %d dispatches", ok, f.disp.count(out.RequestID))
	}
}

func TestReplayAfterRestartAndAfterLRUEviction(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", nil)
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); err != nil {
		t.Fatal(err)
	}
	// Restart: a new kernel (empty LRU) on the same durable store.
	f.store.Close()
	st, err := boltstore.Open(f.path, f.kkey, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, _ := policy.Parse([]byte(f.policyText), "lifecycle.toml")
	k2, _ := kernel.New(kernel.Config{Key: f.kkey, Policy: p, Store: st, Dispatcher: f.disp, Clock: f.clock, ReplayCacheSize: 1})
	if _, err := k2.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("replay after restart: %v", err)
	}
	// Eviction: with a one-entry LRU, consuming another token evicts the
	// first from the cache; the durable set still refuses it.
	f.fixture.k, f.fixture.store = k2, st
	out2 := f.refund(t, 300)
	if _, err := k2.Respond(context.Background(), out2.ApprovalRequestID, f.token(t, out2.ApprovalRequestID, financeLead, "approved", nil), "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("replay after eviction: %v", err)
	}
}

func TestCapabilityRevokedDuringWait(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	if err := f.k.Revoke(context.Background(), f.cap.ID); err != nil {
		t.Fatal(err)
	}
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := f.receipt(t, res.ReceiptID)
	if r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardCapability || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("revoked during wait: %+v, dispatched %d", r.Decision, f.disp.count(out.RequestID))
	}
}

func TestCapabilityExpiredDuringWait(t *testing.T) {
	f := lifecycle(t, "deny")
	var err error
	f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), []string{"refunds"}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := f.refund(t, 450)
	f.clock.Advance(6 * time.Minute) // capability gone, request (600 s) still pending
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := f.receipt(t, res.ReceiptID)
	if r.Decision.Guard != kernel.GuardCapability || !strings.Contains(r.Decision.Reason, "expired") || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("expired during wait: %+v", r.Decision)
	}
}

func TestApprovalAfterDeadline(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	tok := f.token(t, out.ApprovalRequestID, financeLead, "approved", nil)
	f.clock.Advance(600 * time.Second)
	eventually(t, "timeout", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status == approval.StatusExpired })
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, kernel.ErrConflict) {
		t.Fatalf("late token: %v", err)
	}
	rec, _ := f.k.Call(out.RequestID)
	r := f.receipt(t, rec.ReceiptID)
	if r.Decision.Guard != kernel.GuardApprovalTimeout || r.Metadata["previous_receipt_id"] != out.ReceiptID || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("timeout receipt %+v", r)
	}
}

func TestEscalationTiersThenTerminalDeny(t *testing.T) {
	f := lifecycle(t, "escalate")
	out := f.refund(t, 450)
	req, _ := f.k.Approval(out.ApprovalRequestID)
	if req.Tier != 0 || req.Trusts(cfo.Public().String()) {
		t.Fatalf("tier 0 trusts the CFO: %+v", req.TrustedApprovers)
	}
	// Tier 0 lasts 900 s.
	f.clock.Advance(900 * time.Second)
	eventually(t, "escalation", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Tier == 1 })
	req, _ = f.k.Approval(out.ApprovalRequestID)
	if !req.Trusts(cfo.Public().String()) || req.ExpiresAt != f.clock.Now().Unix()+3600 || req.Status != approval.StatusPending {
		t.Fatalf("after escalation: %+v", req)
	}
	// Then the last tier times out: terminal_action deny. Its approvers are
	// told first: a deadline that finds its tier not yet told gives the tier
	// its full time from then instead (announceIfUntold), and advancing the
	// clock between the escalation's commit and its announcement did exactly
	// that (a flake: the request stayed pending, its deadline moved 3600 s on).
	eventually(t, "tier 1 told", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Notified > r.Tier })
	f.clock.Advance(3600 * time.Second)
	eventually(t, "terminal", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status == approval.StatusExpired })
	rec, _ := f.k.Call(out.RequestID)
	if rec.Status != kernel.StatusDenied || rec.Guard != kernel.GuardApprovalTimeout {
		t.Fatalf("%+v", rec)
	}
}

func TestEscalatedTierApproverCanApprove(t *testing.T) {
	f := lifecycle(t, "escalate")
	out := f.refund(t, 450)
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, cfo, "approved", nil), "", ""); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("CFO before escalation: %v", err)
	}
	f.clock.Advance(900 * time.Second)
	eventually(t, "escalation", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Tier == 1 })
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, cfo, "approved", nil), "", "")
	if err != nil || res.Outcome != "approved" {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestAutoApproveAdvisory(t *testing.T) {
	f := lifecycle(t, "auto_approve_advisory")
	out := f.refund(t, 450)
	f.clock.Advance(600 * time.Second)
	eventually(t, "auto approval", func() bool { rec, _ := f.k.Call(out.RequestID); return rec.Status == kernel.StatusAllowed })
	rec, _ := f.k.Call(out.RequestID)
	r := f.receipt(t, rec.ReceiptID)
	if r.Metadata["auto_approved"] != true || r.Metadata["review_required"] != true || r.Metadata["previous_receipt_id"] != out.ReceiptID {
		t.Fatalf("auto-approve receipt %+v", r.Metadata)
	}
}

func TestQuorumDistinctKeysAndProgress(t *testing.T) {
	f := lifecycle(t, "deny")
	out, err := f.k.Submit(context.Background(), f.call(t, "echo", `{"service":"api","env":"production"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	res, err := f.k.Respond(context.Background(), id, f.token(t, id, financeLead, "approved", nil), "", "")
	if err != nil || res.Outcome != "pending" || res.Approvals != 1 || res.Quorum != 2 {
		t.Fatalf("first vote: %+v %v", res, err)
	}
	if f.disp.count(out.RequestID) != 0 {
		t.Fatal("dispatched before quorum")
	}
	// The same key twice (a fresh token) does not count twice.
	if _, err := f.k.Respond(context.Background(), id, f.token(t, id, financeLead, "approved", nil), "", ""); !errors.Is(err, approval.ErrDuplicateVote) {
		t.Fatalf("same key twice: %v", err)
	}
	req, _ := f.k.Approval(id)
	if a, _ := req.Counts(); a != 1 || req.Status != approval.StatusPending {
		t.Fatalf("progress %+v", req)
	}
	res, err = f.k.Respond(context.Background(), id, f.token(t, id, sre, "approved", nil), "", "")
	if err != nil || res.Outcome != "approved" || f.disp.count(out.RequestID) != 1 {
		t.Fatalf("second vote: %+v %v", res, err)
	}
	if r := f.receipt(t, res.ReceiptID); len(r.Metadata["approvers"].([]any)) != 2 {
		t.Fatalf("approvers in receipt: %v", r.Metadata)
	}
}

func TestSelfApprovalRefused(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	// The agent's own key is listed (by mistake) as an approver of this tier.
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, agentK, "approved", nil), "", ""); !errors.Is(err, approval.ErrSelfApproval) {
		t.Fatalf("self approval: %v", err)
	}
}

func TestAmendments(t *testing.T) {
	f := lifecycle(t, "deny")
	ctx := context.Background()
	// Within the grant: approve $300 instead of $450.
	out := f.refund(t, 450)
	res, err := f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"customer_id":"cust-9012","amount":300,"currency":"USD"}`)
	}), "", "")
	if err != nil || res.Outcome != "approved" {
		t.Fatalf("%+v %v", res, err)
	}
	r := f.receipt(t, res.ReceiptID)
	first := f.receipt(t, out.ReceiptID)
	if r.Metadata["original_parameter_hash"] != first.ParameterHash || r.Metadata["amended_parameter_hash"] != r.ParameterHash || r.ParameterHash == first.ParameterHash {
		t.Fatalf("amendment hashes: %v (first %s)", r.Metadata, first.ParameterHash)
	}
	rec, _ := f.k.Call(out.RequestID)
	if !strings.Contains(string(rec.Arguments), `"amount":300`) {
		t.Fatalf("dispatched arguments %s", rec.Arguments)
	}
	// Beyond the grant: an amendment into a forbidden path is denied.
	out, err = f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/tmp/old.log"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	res, err = f.k.Respond(ctx, out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", func(tk *approval.Token) {
		tk.AmendedArguments = json.RawMessage(`{"path":"/etc/passwd"}`)
	}), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if r := f.receipt(t, res.ReceiptID); r.Decision.Verdict != receipt.Deny || r.Decision.Guard != kernel.GuardForbiddenPaths || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("widening amendment: %+v", r.Decision)
	}
}

func TestPolicyReloadedDuringWaitCounts(t *testing.T) {
	f := lifecycle(t, "deny")
	out, _ := f.k.Submit(context.Background(), f.call(t, "delete_file", `{"path":"/srv/data/x"}`, ""))
	// The platform team tightens the policy while the request waits.
	tight := strings.Replace(f.policyText, `forbidden_paths = ["/etc/**"]
[grants.approval]
expose_arguments = true`, `forbidden_paths = ["/etc/**", "/srv/**"]
[grants.approval]
expose_arguments = true`, 1)
	p, err := policy.Parse([]byte(tight), "tight.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if r := f.receipt(t, res.ReceiptID); r.Decision.Guard != kernel.GuardForbiddenPaths || r.PolicyHash != p.Hash {
		t.Fatalf("reloaded policy not applied: %+v", r)
	}
}

func TestResumeRematchesTheGrantAfterReload(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	// The reloaded policy narrows the grant to another tool (echo moves no
	// money, so it cannot keep a threshold).
	narrowed := strings.Replace(f.policyText, `id = "refunds"
server = "demo"
tool = "issue_refund"
[grants.constraints]
require_approval_above = { threshold_units = 200, currency = "USD" }`, `id = "refunds"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true`, 1)
	p, err := policy.Parse([]byte(narrowed), "narrow.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	res, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", nil), "", "")
	if err != nil {
		t.Fatal(err)
	}
	if r := f.receipt(t, res.ReceiptID); r.Decision.Guard != kernel.GuardScope || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("narrowed grant still executed: %+v", r.Decision)
	}
}

func TestBatchApprovalExhaustedMidway(t *testing.T) {
	f := lifecycle(t, "deny")
	calls := int64(2)
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
		Audience: f.k.PublicKey().String(), ServerPattern: "demo", ToolPattern: "issue_*", MaxCalls: &calls,
		MaxAmountPerCall: &approval.Amount{Units: 500, Currency: "USD"},
		NotBefore:        f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
	raw, _ := bt.Sign(financeLead)
	if _, err := f.k.CreateBatch(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", `{"customer_id":"c","amount":450,"currency":"USD"}`,
			`{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if out.Status != kernel.StatusAllowed || f.receipt(t, out.ReceiptID).Metadata["batch_approval_id"] != bt.ID {
				t.Fatalf("call %d under batch: %+v", i, out)
			}
		} else if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("exhausted batch still approving: %+v", out)
		}
	}
	bs, _, _ := f.k.ListBatches("", 10)
	if len(bs) != 1 || bs[0].Usage.Calls != 2 {
		t.Fatalf("usage %+v", bs[0].Usage)
	}
	// A revoked batch falls back to per-call approval.
	if err := f.k.RevokeBatch(context.Background(), bt.ID); err != nil {
		t.Fatal(err)
	}
	// An untrusted key cannot create one.
	bt2 := *bt
	bt2.ID, bt2.Approver = approval.NewBatchID(), outsider.Public().String()
	raw2, _ := bt2.Sign(outsider)
	if _, err := f.k.CreateBatch(context.Background(), raw2); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("outsider batch: %v", err)
	}
}

func TestRestartRearmsTimersAndFiresMissedDeadlines(t *testing.T) {
	f := lifecycle(t, "deny")
	out := f.refund(t, 450)
	if f.k.ArmedTimers() != 1 {
		t.Fatalf("armed %d", f.k.ArmedTimers())
	}
	f.store.Close()
	// chiod is down while the deadline passes.
	fresh := clock.NewFake(f.clock.Now().Add(601 * time.Second))
	st, err := boltstore.Open(filepath.Clean(f.path), f.kkey, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, _ := policy.Parse([]byte(f.policyText), "lifecycle.toml")
	k2, _ := kernel.New(kernel.Config{Key: f.kkey, Policy: p, Store: st, Dispatcher: f.disp, Clock: fresh})
	if err := k2.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "missed deadline fired at start-up", func() bool {
		r, _ := k2.Approval(out.ApprovalRequestID)
		return r.Status == approval.StatusExpired
	})
	// A pending request whose deadline is still ahead is re-armed.
	f2 := lifecycle(t, "deny")
	out2 := f2.refund(t, 450)
	f2.store.Close()
	st2, _ := boltstore.Open(f2.path, f2.kkey, boltstore.Options{})
	defer st2.Close()
	k3, _ := kernel.New(kernel.Config{Key: f2.kkey, Policy: p, Store: st2, Dispatcher: f2.disp, Clock: f2.clock})
	if err := k3.Recover(context.Background()); err != nil || k3.ArmedTimers() != 1 {
		t.Fatalf("re-arm: %v, %d armed", err, k3.ArmedTimers())
	}
	f2.clock.Advance(600 * time.Second)
	eventually(t, "re-armed timer fired", func() bool { r, _ := k3.Approval(out2.ApprovalRequestID); return r.Status == approval.StatusExpired })
}

func TestEventsPublished(t *testing.T) {
	f := lifecycle(t, "deny")
	events, cancel, ok := f.k.Subscribe(kernel.PoolWait)
	if !ok {
		t.Fatal("subscribe")
	}
	defer cancel()
	out := f.refund(t, 450)
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, f.token(t, out.ApprovalRequestID, financeLead, "approved", nil), "", ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 {
		select {
		case e := <-events:
			got = append(got, e.Type)
		case <-time.After(10 * time.Second): // a failure's bound only
			t.Fatalf("events so far %v", got)
		}
	}
	if strings.Join(got, ",") != "approval.requested,approval.resolved,call.completed" {
		t.Fatalf("events %v", got)
	}
}

// A standing approval's money limits bind to the amount in the arguments,
// not to what the agent declares: within the limit it covers the call even
// with no max_amount in the intent; above it, the call waits for a human.
func TestBatchLimitsReadTheArguments(t *testing.T) {
	f := lifecycle(t, "deny")
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: financeLead.Public().String(),
		Audience: f.k.PublicKey().String(), ServerPattern: "demo", ToolPattern: "issue_refund", MaxAmountPerCall: &approval.Amount{Units: 500, Currency: "USD"},
		NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
	raw, _ := bt.Sign(financeLead)
	if _, err := f.k.CreateBatch(context.Background(), raw); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		amount int
		want   string
	}{{450, kernel.StatusAllowed}, {600, kernel.StatusPendingApproval}} {
		out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund",
			fmt.Sprintf(`{"customer_id":"c","amount":%d,"currency":"USD"}`, c.amount), `{"purpose":"no amount declared"}`))
		if err != nil || out.Status != c.want {
			t.Fatalf("%d USD: %+v %v", c.amount, out, err)
		}
	}
}

// A closing kernel takes no deadline action: with auto_approve_advisory,
// a deadline passing after Close neither approves nor dispatches; the next
// start (Recover) fires it.
func TestCloseDisarmsDeadlines(t *testing.T) {
	f := lifecycle(t, "auto_approve_advisory")
	out := f.refund(t, 450)
	if f.k.ArmedTimers() != 1 {
		t.Fatalf("armed %d", f.k.ArmedTimers())
	}
	f.k.Close()
	if n := f.k.ArmedTimers(); n != 0 {
		t.Fatalf("after Close %d deadline(s) still armed", n)
	}
	f.clock.Advance(600 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if rec, _ := f.k.Call(out.RequestID); rec.Status != kernel.StatusPendingApproval || f.disp.count(out.RequestID) != 0 {
		t.Fatalf("after Close the deadline acted: call %s, dispatched %d", rec.Status, f.disp.count(out.RequestID))
	}
}
