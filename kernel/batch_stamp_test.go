package kernel_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// A standing approval is judged when the call's allow decision commits
// (TestBatchWindowIsJudgedAtTheDecisionCommit), but the allow receipt
// kept the time the call ARRIVED. A batch created between the two (its
// not_before is its creation) allowed the call with a receipt stamped
// before the batch's window opened, and `chio receipt verify` of the
// kernel's own honest log reported "batch token ... does not cover this
// receipt: timestamp ... is outside its window" (beyond its 60 s of
// skew). Found by the
// concurrency stress (stress_test.go, seed 30).
func TestBatchAllowReceiptIsStampedInsideTheWindow(t *testing.T) {
	kkey := keys.FromSeed(bytes.Repeat([]byte{6}, 32))
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	log := receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour, Now: fake.Now})
	p, err := policy.Parse([]byte(fmt.Sprintf(expiryPolicy, financeLead.Public(), cfo.Public(), "deny")), "expiry.toml")
	if err != nil {
		t.Fatal(err)
	}
	hs := &batchHookStore{}
	disp := &timedDispatcher{clock: fake}
	w := testkit.NewWorld(t, testkit.Options{Policy: p, Dispatcher: disp, Clock: fake, KernelKey: testkit.Key(kkey), Log: log,
		Server: "pay", Grants: []string{"refunds"}, CapabilityTTL: 2 * time.Hour,
		WrapStore: func(s kernel.Store) kernel.Store { hs.Store = s; return hs }})
	ctx := context.Background()
	// Update 1 is the call's batch claim + allow decision. It lands two
	// minutes later (a loaded store, as in the test above), and the Finance
	// Lead creates a standing approval from then on (Update 2, run from
	// inside the hook) just before it.
	var batch string
	hs.hook = func(n int64) {
		if n != 1 {
			return
		}
		fake.Advance(2 * time.Minute)
		b, err := w.Kernel.CreateBatch(ctx, revSignBatch(t, w.Kernel, fake.Now(), time.Hour, nil))
		if err != nil {
			t.Error(err)
			return
		}
		batch = b.Token.ID
	}
	hs.armed.Store(true)
	out := w.Submit(t, "issue_refund", `{"amount":50,"currency":"USD","customer_id":"c"}`, "")
	hs.armed.Store(false)
	if batch == "" || out.Status != kernel.StatusAllowed {
		t.Fatalf("the call was not allowed by the standing approval created before its decision committed: %+v (batch %q)", out, batch)
	}
	w.Kernel.WaitSettles()
	if _, _, err := log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := w.Store.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: kkey.Public()})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var ps []string
		for _, p := range rep.Problems {
			ps = append(ps, p.String())
		}
		t.Fatalf("the kernel's honest log does not verify:\n%s", strings.Join(ps, "\n"))
	}
}
