package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// Who may sign a standing (batch) approval: only a key that could approve
// the covered call with a per-call token when it is parked (escalation
// tier 0 of the policy in force, not the agent itself, not a requester,
// quorum 1). These tests pin each part of that rule, at creation and at
// each call the batch would cover.

// noTierPolicy names a second approver, "Bystander", in no escalation tier.
const noTierPolicy = `
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
timeout_action = "escalate"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Bystander"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead"]
timeout_seconds = 900
`

// signBatch signs a one-hour standing approval by k for server demo.
func signBatch(t *testing.T, f *fixture, k keys.PrivateKey, tool string, mutate func(*approval.BatchToken)) []byte {
	t.Helper()
	bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: k.Public().String(),
		Audience: f.k.PublicKey().String(), ServerPattern: "demo", ToolPattern: tool,
		NotBefore: f.clock.Now().Unix(), NotAfter: f.clock.Now().Add(time.Hour).Unix()}
	if mutate != nil {
		mutate(bt)
	}
	raw, err := bt.Sign(k)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// submitRefund submits a 450 USD refund (above the approval threshold).
func submitRefund(t *testing.T, f *fixture) *kernel.Outcome {
	t.Helper()
	out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund",
		`{"customer_id":"c","amount":450,"currency":"USD"}`, `{"purpose":"p","max_amount":{"units":450,"currency":"USD"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reload puts policy text in force, as a policy reload does.
func reload(t *testing.T, f *fixture, text string) {
	t.Helper()
	p, err := policy.Parse([]byte(text), "reloaded.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.k.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func TestBatchFromApproverInNoEscalationTierIsRefused(t *testing.T) {
	bystander := keys.FromSeed([]byte("bystander-bystander-bystander-32"))
	f := newFixture(t)
	p, err := policy.Parse([]byte(fmt.Sprintf(noTierPolicy, financeLead.Public(), bystander.Public())), "tier.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.agent = agentK
	f.capRaw, f.cap, err = f.k.IssueCapability(agentK.Public(), []string{"refunds"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// Per call, the bystander is not trusted: the policy gives them no tier.
	out := submitRefund(t, f)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("first call: %+v", out)
	}
	tok := testkit.SignToken(t, f.k, f.clock.Now(), out.ApprovalRequestID, bystander, approval.DecisionApproved, nil)
	if _, err := f.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", ""); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("bystander per-call token: %v (want ErrUntrustedSigner)", err)
	}

	// So the same key's standing approval is refused, and approves nothing.
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f, bystander, "*", nil)); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("bystander batch: %v (want ErrUntrustedSigner)", err)
	}
	if bs, _, _ := f.k.ListBatches("", 10); len(bs) != 0 {
		t.Fatalf("a refused batch was stored: %d", len(bs))
	}
	if out2 := submitRefund(t, f); out2.Status == kernel.StatusAllowed {
		t.Fatalf("a key that may approve no call of grant refunds approved one with a batch: %+v (dispatched %d)",
			out2, f.disp.count(out2.RequestID))
	}
}

// A CFO named only in the second tier cannot approve a refund while it is
// at tier 0, so cannot pre-approve refunds either.
func TestBatchFromLaterTierApproverIsRefused(t *testing.T) {
	f := lifecycle(t, "escalate")
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, cfo, "issue_refund", nil)); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("tier-1 batch: %v (want ErrUntrustedSigner)", err)
	}
	// The tier-0 approver may.
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, financeLead, "issue_refund", nil)); err != nil {
		t.Fatalf("tier-0 batch: %v", err)
	}
}

// A batch accepted while its signer was trusted at tier 0 stops covering
// calls once a reload puts the signer in a later tier.
func TestBatchStopsCoveringWhenReloadMovesSignerToLaterTier(t *testing.T) {
	f := lifecycle(t, "deny") // without escalation every grant approver decides
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, cfo, "issue_refund", nil)); err != nil {
		t.Fatal(err)
	}
	if out := submitRefund(t, f.fixture); out.Status != kernel.StatusAllowed {
		t.Fatalf("CFO batch under timeout_action=deny: %+v", out)
	}
	reload(t, f.fixture, fmt.Sprintf(lifecyclePolicy, financeLead.Public(), cfo.Public(), sre.Public(), outsider.Public(), agentK.Public(), "escalate"))
	out := submitRefund(t, f.fixture)
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("tier-1 signer's batch still covers a tier-0 call: %+v (dispatched %d)", out, f.disp.count(out.RequestID))
	}
}

// A batch stops covering calls once its signer is removed from the grant.
func TestBatchStopsCoveringWhenSignerRemovedFromPolicy(t *testing.T) {
	f := lifecycle(t, "deny")
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, financeLead, "issue_refund", nil)); err != nil {
		t.Fatal(err)
	}
	if out := submitRefund(t, f.fixture); out.Status != kernel.StatusAllowed {
		t.Fatalf("batch before the reload: %+v", out)
	}
	// The refunds grant's Finance Lead gets another key (its first mention).
	fl := fmt.Sprintf("public_key = %q\ndisplay_name = \"Finance Lead\"", financeLead.Public().String())
	if !strings.Contains(f.policyText, fl) {
		t.Fatal("fixture policy changed")
	}
	reload(t, f.fixture, strings.Replace(f.policyText, fl,
		fmt.Sprintf("public_key = %q\ndisplay_name = \"Finance Lead\"", outsider.Public().String()), 1))
	if out := submitRefund(t, f.fixture); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("removed signer's batch still covers: %+v", out)
	}
}

// The agent's own key, even when the grant lists it as an approver, never
// approves the agent's own calls with a batch (as with a per-call token).
func TestBatchNeverCoversTheSignersOwnCalls(t *testing.T) {
	f := lifecycle(t, "deny") // "Agent Itself" is a tier-0 refunds approver
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, agentK, "issue_refund", func(b *approval.BatchToken) {
		b.Subject = agentK.Public().String()
	})); !errors.Is(err, approval.ErrSelfApproval) {
		t.Fatalf("batch for the signer's own calls: %v (want ErrSelfApproval)", err)
	}
	// A batch for any agent is accepted (it may cover other agents) but not
	// for the signer's own calls.
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, agentK, "issue_refund", nil)); err != nil {
		t.Fatal(err)
	}
	if out := submitRefund(t, f.fixture); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("agent approved its own call with a batch: %+v", out)
	}
}

// A key that became a requester of the grant (separation of duties) no
// longer approves its calls with a batch. The validator forbids a key that
// is both approver and requester, so the policy is edited after parsing to
// prove the kernel holds the rule on its own.
func TestBatchFromRequesterDoesNotCover(t *testing.T) {
	f := lifecycle(t, "deny")
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, financeLead, "issue_refund", nil)); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse([]byte(f.policyText), "requester.toml")
	if err != nil {
		t.Fatal(err)
	}
	g, ok := p.Grant("refunds")
	if !ok {
		t.Fatal("no refunds grant")
	}
	g.Approval.Requesters = []string{financeLead.Public().String()}
	f.k.SetPolicy(p)
	if out := submitRefund(t, f.fixture); out.Status != kernel.StatusPendingApproval {
		t.Fatalf("a requester's batch covered the call: %+v", out)
	}
}

// One signature never meets a quorum of two: a batch does not cover a
// quorum-2 grant's calls, and a key that approves only quorum-2 grants
// may not create one.
func TestBatchNeverMeetsAQuorumOfTwo(t *testing.T) {
	f := lifecycle(t, "deny")
	// Finance Lead approves refunds (quorum 1) and deploys (quorum 2).
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, financeLead, "*", nil)); err != nil {
		t.Fatal(err)
	}
	out, err := f.k.Submit(context.Background(), f.call(t, "echo", `{"service":"api","env":"production"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("quorum-2 call under a one-signer batch: %+v %v", out, err)
	}
	// SRE approves only deploys (quorum 2).
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, sre, "echo", nil)); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("quorum-2-only approver's batch: %v (want ErrUntrustedSigner)", err)
	}
	// Nor may a batch reach, by its patterns, only grants its signer cannot
	// approve singly: Finance Lead for echo alone.
	if _, err := f.k.CreateBatch(context.Background(), signBatch(t, f.fixture, financeLead, "echo", nil)); !errors.Is(err, approval.ErrUntrustedSigner) {
		t.Fatalf("batch reaching only a quorum-2 grant: %v (want ErrUntrustedSigner)", err)
	}
}
