package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/cli"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// Once a request is resolved, `chio approval show` must count the votes
// its deciding receipt counts, and mark the others as the receipt does.
// The Lead approves a quorum-2 call; a reload removes the Lead (their key
// leaked) and trusts another approver; the CFO and that approver approve
// and decide it. The allow receipt names the Lead's vote "uncounted", yet
// the resolved request showed "3/2 approved" and the Lead's vote like any
// other: the approver read a decision basis the receipt does not record.
func TestApprovalShowOfAResolvedRequestCountsAsItsReceipt(t *testing.T) {
	w := newApprovalWorld(t)
	ctx := context.Background()
	out := w.submit(t, "delete_file", `{"path":"/tmp/chio-cli-test-none"}`, "")
	id := out.ApprovalRequestID
	if id == "" {
		t.Fatalf("not parked: %+v", out)
	}
	// Exits 3 while a vote leaves the call pending, then 6: the demo tool
	// finds no such file to delete, which does not matter here.
	approve := func(who string) {
		t.Helper()
		if _, se, code := w.run(adminEnv(), "approval", "approve", id, "--key", w.key(who)); code != 0 && code != cli.ExitPending && code != cli.ExitToolFailed {
			t.Fatalf("%s's approval: exit %d: %s", who, code, se)
		}
	}
	approve("lead")
	key := func(name string) keys.PublicKey {
		k, err := keys.LoadPrivateKey(w.key(name))
		if err != nil {
			t.Fatal(err)
		}
		return k.Public()
	}
	lead, cfo, stranger := key("lead"), key("cfo"), key("stranger")
	p, err := policy.Parse([]byte(strings.ReplaceAll(fmt.Sprintf(approvalPolicy, stranger, cfo), "Finance Lead", "New Lead")), "cli.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.k.ApplyPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	approve("cfo")
	approve("stranger")
	w.k.WaitRecovery(ctx)
	req, err := w.k.Approval(id)
	if err != nil || req.Status != approval.StatusApproved || req.Resolution == nil || req.Resolution.ReceiptID == "" {
		t.Fatalf("not approved with a receipt: %+v %v", req, err)
	}
	r := w.tw.Receipt(t, req.Resolution.ReceiptID)
	if got := fmt.Sprint(r.Metadata["uncounted"]); got != fmt.Sprint([]any{lead.String()}) {
		t.Fatalf("the receipt's uncounted is %s, want only the Lead %s", got, lead)
	}
	quorum, so := w.showLine(t, id, "QUORUM", "")
	if !strings.Contains(quorum, "2/2 approved") {
		t.Fatalf("approval show says %q; the receipt counts 2 of quorum 2:\n%s", quorum, so)
	}
	vote, so := w.showLine(t, id, "VOTE", lead.String())
	if !strings.Contains(vote, approval.NoLongerApproverNote) || strings.Count(so, "not counted") != 1 {
		t.Fatalf("approval show lists the Lead's vote, which the receipt does not count, as %q; want it marked %q, and only it:\n%s",
			vote, approval.NoLongerApproverNote, so)
	}
}
