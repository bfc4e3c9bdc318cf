package kernel_test

// Delivery outcomes in the real kernel's log: a call whose delivery failed
// gets an incomplete receipt chained (previous_receipt_id) to its allow
// receipt. The honest log must verify offline with those links checked,
// and a log whose links were re-signed to lie must not.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// deliveryLogPolicy: echo needs a human under grant "deploys" and nobody
// under grant "direct".
const deliveryLogPolicy = `
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
expose_arguments = true
%s
[[grants]]
id = "direct"
server = "demo"
tool = "echo"
`

type deliveryLog struct {
	*honestLog
	direct []byte // a capability for grant "direct"
	// Receipt ids: the allow and the delivery outcome of each failed call.
	allows, outcomes []string
}

// newDeliveryLog: a direct call and an approved call (its arguments
// amended by the approver) whose deliveries failed (outcome unknown), a direct call never delivered, and a direct
// call that succeeded (no outcome receipt).
func newDeliveryLog(t *testing.T) *deliveryLog {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(deliveryLogPolicy, approversBlock(financeLead))), "delivery.toml")
	if err != nil {
		t.Fatal(err)
	}
	d := &deliveryLog{honestLog: newHonestLog(t, p)}
	if d.direct, _, err = d.k.IssueCapability(agentK.Public(), []string{"direct"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	failWith := func(err error) {
		d.disp.mu.Lock()
		d.disp.err = err
		d.disp.mu.Unlock()
	}
	settled := func(out *kernel.Outcome, execution string) {
		t.Helper()
		rec, err := d.k.Call(out.RequestID)
		if err != nil || rec.Execution != execution || rec.ReceiptID == rec.DecisionReceiptID {
			t.Fatalf("call %+v %v, want execution %s with an outcome receipt", rec, err, execution)
		}
		d.allows, d.outcomes = append(d.allows, rec.DecisionReceiptID), append(d.outcomes, rec.ReceiptID)
	}
	submit := func(capRaw []byte, args string) *kernel.Outcome {
		t.Helper()
		out, err := d.k.Submit(ctx, testkit.NewCall(t, agentK, capRaw, "demo", "echo", args, "", d.clock.Now()))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	failWith(errors.New("connection reset mid-call"))
	settled(submit(d.direct, `{"x":1}`), kernel.ExecutionUnknown)
	parked := d.park(t, `{"x":2}`)
	amend := func(tk *approval.Token) { tk.AmendedArguments = json.RawMessage(`{"x":5}`) }
	if _, err := d.k.Respond(ctx, parked.ApprovalRequestID,
		testkit.SignToken(t, d.k, d.clock.Now(), parked.ApprovalRequestID, financeLead, approval.DecisionApproved, amend), "", ""); err != nil {
		t.Fatal(err)
	}
	d.k.WaitSettles()
	settled(parked, kernel.ExecutionUnknown)
	failWith(&kernel.DeliveryError{Err: errors.New("connection refused"), NotDelivered: true})
	settled(submit(d.direct, `{"x":3}`), kernel.ExecutionNotDelivered)
	failWith(nil)
	if out := submit(d.direct, `{"x":4}`); out.Execution != kernel.ExecutionSucceeded {
		t.Fatalf("%+v", out)
	}
	return d
}

func TestHonestLogWithDeliveryOutcomesVerifies(t *testing.T) {
	d := newDeliveryLog(t)
	if r := d.w.Receipt(t, d.allows[1]); r.Metadata["amended"] != true {
		t.Fatalf("the approved call's allow is not amended: %v", r.Metadata)
	}
	rep := d.mustVerify(t, "delivery outcomes")
	if rep.Chains != 1 || rep.Deliveries != 3 {
		t.Fatalf("%d approval chains, %d delivery outcomes; want 1 and 3", rep.Chains, rep.Deliveries)
	}
}

// A delivery outcome re-pointed at another call's allow receipt, or a
// second outcome for one allow, re-signed with the kernel key (and the
// checkpoints over the rewritten log re-signed too): before, verify never
// read the link of an incomplete receipt without approval_request_id, and
// passed both logs.
func TestForgedDeliveryLinkFailsVerify(t *testing.T) {
	d := newDeliveryLog(t)
	_, exp := d.verify(t)
	t.Run("outcome re-pointed at another call's allow", func(t *testing.T) {
		forged := resignExport(t, exp, d.kkey, func(r *receipt.Receipt) {
			if r.ID == d.outcomes[2] {
				r.Metadata["previous_receipt_id"] = d.allows[1]
			}
		})
		expectVerifyProblem(t, forged, d.kkey, "broken delivery link: not for the call allow receipt "+d.allows[1]+" decided")
	})
	t.Run("a second outcome for one allow", func(t *testing.T) {
		// The not-delivered call's outcome now claims the first call's allow,
		// copying that call's fields: the first call "failed twice".
		var first receipt.Receipt
		forged := resignExport(t, exp, d.kkey, func(r *receipt.Receipt) {
			switch r.ID {
			case d.outcomes[0]:
				first = *r
			case d.outcomes[2]:
				r.RequestID, r.ParameterHash = first.RequestID, first.ParameterHash
				r.Metadata["previous_receipt_id"] = d.allows[0]
			}
		})
		expectVerifyProblem(t, forged, d.kkey, "allow receipt "+d.allows[0]+" already has a delivery outcome receipt "+d.outcomes[0])
	})
}

// resignExport rewrites the receipts of export exp with mutate and signs
// them, and every checkpoint over the result, with the kernel key: what
// only the kernel key's holder (or a kernel bug) could produce, so the
// links are all that is left to check.
func resignExport(t *testing.T, exp []byte, key keys.PrivateKey, mutate func(*receipt.Receipt)) []byte {
	t.Helper()
	ls := bytes.Split(bytes.TrimSuffix(exp, []byte("\n")), []byte("\n"))
	var leaves [][32]byte
	for i, l := range ls {
		if r, err := receipt.Parse(l); err == nil {
			mutate(r)
			if ls[i], err = receipt.Sign(key, r); err != nil {
				t.Fatal(err)
			}
			leaves = append(leaves, receipt.LeafHash(ls[i]))
		}
	}
	tree := receipt.NewTreeFromLeaves(leaves)
	for i, l := range ls {
		if cp, err := receipt.VerifyCheckpoint(l, key.Public()); err == nil {
			root, _ := tree.Root(cp.TreeSize)
			if ls[i], _, err = receipt.SignCheckpoint(key, cp.TreeSize, root, time.UnixMilli(cp.Timestamp)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return append(bytes.Join(ls, []byte("\n")), '\n')
}

func expectVerifyProblem(t *testing.T, exp []byte, key keys.PrivateKey, want string) {
	t.Helper()
	rep, err := receipt.VerifyExport(bytes.NewReader(exp), receipt.VerifyOptions{KernelKey: key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		if bytes.Contains([]byte(p.String()), []byte(want)) {
			return
		}
	}
	t.Fatalf("verify did not find %q; problems: %v", want, rep.Problems)
}
