package kernel_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// passOverDenyPolicy: echo (grant "deploys", the honest-log rig's) at
// quorum 1 and deny_quorum %[4]d escalates from tier 1 (On-call %[1]s and
// %[5]s) to tier 2 (Security %[3]s and %[6]s); the Finance Lead is %[2]s.
const passOverDenyPolicy = `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "deploys"
server = "demo"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
timeout_action = "escalate"
quorum = 1
deny_quorum = %[4]d
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "On-call"
[[grants.approval.approvers]]
public_key = "%[2]s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%[3]s"
display_name = "Security"
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = [%[5]s]
timeout_seconds = 600
[[grants.approval.escalation.tiers]]
approvers = [%[6]s]
timeout_seconds = 3600
`

// A reload that passes a request over a tier now left to the calling
// agent, to one where the Finance Lead's recorded denial meets a lowered
// deny_quorum (the SRE's denial no longer counts: the reload removed that
// key), ends it denied by the Finance Lead, counted: the receipt
// and the resolution name as uncounted only the SRE, whose key the
// reload removed, and the honest log verifies offline. The uncounted
// votes were judged at the tier passed over (only the agent's key), so
// the deciding denial was named uncounted, and `chio receipt verify`
// refused the log.
func TestHonestLogVerifiesADenyAtAPassedOverTier(t *testing.T) {
	pol := func(onCall fmt.Stringer, denyQuorum int, tier1, tier2 string) *policy.Policy {
		text := fmt.Sprintf(passOverDenyPolicy, onCall, financeLead.Public(), cfo.Public(), denyQuorum, tier1, tier2)
		p, err := policy.Parse([]byte(text), "pass-over-deny.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := newHonestLog(t, pol(sre.Public(), 3, `"On-call", "Finance Lead"`, `"Security"`))
	out := a.park(t, `{"msg":"hi"}`)
	id := out.ApprovalRequestID
	a.vote(t, id, sre, approval.DecisionDenied)
	if res := a.vote(t, id, financeLead, approval.DecisionDenied); res.Outcome != approval.StatusPending {
		t.Fatalf("two denials of 3: %+v", res)
	}
	// On-call is now the agent's own key (the SRE's removed); the Finance
	// Lead decides at tier 2, where one denial ends a call.
	if err := a.k.ApplyPolicy(t.Context(), pol(agentK.Public(), 1, `"On-call"`, `"Security", "Finance Lead"`)); err != nil {
		t.Fatal(err)
	}
	r, err := a.k.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != approval.StatusDenied || r.Resolution == nil || r.Resolution.Guard != kernel.GuardHumanApproval {
		t.Fatalf("after the reload the request is %s (%+v), want denied by the Finance Lead", r.Status, r.Resolution)
	}
	want := []string{sre.Public().String()}
	rec, err := a.k.Call(out.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	rc := a.w.Receipt(t, rec.ReceiptID)
	if rc.Metadata["approver"] != financeLead.Public().String() || !slices.Equal(keysOf(t, rc.Metadata["uncounted"]), want) ||
		!slices.Equal(r.Resolution.Uncounted, want) {
		t.Fatalf("deny names approver %v, uncounted %v (resolution %v); want the Finance Lead deciding, counted, and only the SRE (removed) uncounted",
			rc.Metadata["approver"], rc.Metadata["uncounted"], r.Resolution.Uncounted)
	}
	// Every view reads the request: it says the tier that decided and the
	// one passed over, as the deny receipt does.
	if r.Tier != 1 || !slices.Equal(r.SkippedTiers, []int{0}) || !slices.Contains(r.TrustedApprovers, financeLead.Public().String()) {
		t.Fatalf("the denied request says tier %d, skipped %v, approvers %v; want tier 1 (index), tier 0 passed over, the Finance Lead among its approvers",
			r.Tier, r.SkippedTiers, r.TrustedApprovers)
	}
	if got := rc.Metadata["skipped_tiers"]; fmt.Sprint(got) != "[0]" {
		t.Fatalf("the deny receipt's skipped_tiers %v, want [0]", got)
	}
	a.mustVerify(t, "a deny at a passed-over tier")
}
