package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// The honest log of a question a reload approves by an earlier agreeing
// set (reload_resolve.go: the latest counted approval answers otherwise)
// verifies: the allow names the CFO's "eu", counts the Finance Lead's
// "eu" with it, and names the SRE's later "us" uncounted.
func TestHonestLogVerifiesAReloadApprovingAnEarlierAgreeingSet(t *testing.T) {
	cto := keys.FromSeed([]byte("cto-cto-cto-cto-cto-cto-cto-cto-"))
	text := func(keys ...any) *policy.Policy {
		// The rig's capability holds grant "deploys".
		text := strings.Replace(fmt.Sprintf(askQuorumPolicy, askApprovers(keys...)), `id = "ask"`, `id = "deploys"`, 1)
		p, err := policy.Parse([]byte(text), "ask.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := text(financeLead.Public().String(), "Finance Lead", cfo.Public().String(), "CFO", sre.Public().String(), "SRE", cto.Public().String(), "CTO")
	a := newHonestLog(t, all)
	ctx := context.Background()
	out, err := a.k.Submit(ctx, testkit.NewCall(t, agentK, a.w.CapRaw, "demo", "ask", `{"questions":[{"id":"region","text":"Which region?","type":"single","options":["eu","us"]}]}`, "", a.clock.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	id := out.ApprovalRequestID
	answer := func(by keys.PrivateKey, region string) {
		if _, err := a.k.Respond(ctx, id, testkit.SignToken(t, a.k, a.clock.Now(), id, by, approval.DecisionApproved, answering(region)), "", ""); err != nil {
			t.Fatal(err)
		}
	}
	reload := func(p *policy.Policy) {
		if err := a.k.ApplyPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	answer(financeLead, "eu")
	reload(text(cfo.Public().String(), "CFO", sre.Public().String(), "SRE", cto.Public().String(), "CTO"))
	answer(cfo, "eu")
	reload(text(sre.Public().String(), "SRE", cto.Public().String(), "CTO"))
	answer(sre, "us")
	reload(all)
	a.k.WaitRecovery(ctx)
	rec, err := a.k.Call(out.RequestID)
	if err != nil || rec.Status != kernel.StatusAllowed {
		t.Fatalf("call after the reload: %+v %v", rec, err)
	}
	r := a.w.Receipt(t, rec.ReceiptID)
	if r.Metadata["approver"] != cfo.Public().String() || !slices.Equal(keysOf(t, r.Metadata["uncounted"]), []string{sre.Public().String()}) {
		t.Fatalf("allow names approver %v, uncounted %v; want the CFO's \"eu\" deciding and the SRE's \"us\" uncounted", r.Metadata["approver"], r.Metadata["uncounted"])
	}
	a.mustVerify(t, "a reload approving an earlier agreeing set")
}
