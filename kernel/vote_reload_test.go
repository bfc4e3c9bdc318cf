package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// A vote is judged by the policy in force when it commits. Respond checks
// the token against the policy it reads; a reload may land after that and
// before the vote's commit (an operator removing an approver, raising the
// quorum, or removing the grant while the approver clicks). The vote was
// once counted under the policy read before the commit: a key the reload
// had removed approved the call, and it ran.
func TestVoteIsJudgedByThePolicyInForceAtItsCommit(t *testing.T) {
	cfoOnly := func(t *testing.T) *policy.Policy {
		// The Finance Lead's key leaves the grant.
		text := fmt.Sprintf(voteOrderPolicy, cfo.Public(), cfo.Public(), 1, 1, "deny")
		text = text[:strings.LastIndex(text, "[[grants.approval.approvers]]")]
		p, err := policy.Parse([]byte(text), "cfo-only.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	grantGone := func(t *testing.T) *policy.Policy {
		// Grant "refunds" is replaced by one the agent's capability lacks.
		text := strings.Replace(fmt.Sprintf(voteOrderPolicy, financeLead.Public(), cfo.Public(), 1, 1, "deny"),
			`id = "refunds"`, `id = "refunds-v2"`, 1)
		p, err := policy.Parse([]byte(text), "renamed.toml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		decision string
		// reload runs after the token was verified, before the vote commits.
		reload func(t *testing.T, k *kernel.Kernel)
		// refused is the error the vote must get (nil: it counts).
		refused error
	}{
		{"approver removed, reload complete", approval.DecisionApproved, func(t *testing.T, k *kernel.Kernel) {
			if err := k.ApplyPolicy(context.Background(), cfoOnly(t)); err != nil {
				t.Error(err)
			}
		}, approval.ErrUntrustedSigner},
		{"approver removed, denial", approval.DecisionDenied, func(t *testing.T, k *kernel.Kernel) {
			if err := k.ApplyPolicy(context.Background(), cfoOnly(t)); err != nil {
				t.Error(err)
			}
		}, approval.ErrUntrustedSigner},
		// The reload is in force; its reconcile has not reached this request
		// yet (many pending requests, one commit each).
		{"quorum raised, before its reconcile", approval.DecisionApproved, func(t *testing.T, k *kernel.Kernel) {
			k.SetPolicy(quorumPolicy(t, 2, 1, "deny"))
		}, nil},
		{"grant removed, before its reconcile", approval.DecisionApproved, func(t *testing.T, k *kernel.Kernel) {
			k.SetPolicy(grantGone(t))
		}, approval.ErrNoApprovers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disp := &argsDispatcher{}
			fake := clock.NewFake(time.Unix(1_900_000_000, 0))
			w := testkit.NewWorld(t, testkit.Options{Policy: quorumPolicy(t, 1, 1, "deny"), Dispatcher: disp, Clock: fake,
				Server: "pay", Grants: []string{"refunds"}})
			ctx := context.Background()
			out := w.Submit(t, "issue_refund", `{"amount":500,"currency":"USD","customer_id":"c"}`, "")
			if out.Status != kernel.StatusPendingApproval {
				t.Fatalf("park: %+v", out)
			}
			tok := w.Token(t, out.ApprovalRequestID, financeLead, tc.decision, nil)
			w.Kernel.BeforeVoteCommit(func() { tc.reload(t, w.Kernel) })
			res, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
			ran := len(disp.got(out.RequestID))
			req, rerr := w.Kernel.Approval(out.ApprovalRequestID)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.refused == nil {
				// Counted against the quorum in force: one approval of two.
				if err != nil || res.Outcome != approval.StatusPending || res.Quorum != 2 || ran != 0 {
					t.Fatalf("under quorum 2 (reloaded before the vote committed) one approval answered %+v (err %v); request %s, tool ran %d time(s)",
						res, err, req.Status, ran)
				}
				return
			}
			if !errors.Is(err, tc.refused) {
				t.Fatalf("a vote the policy in force no longer allows answered %+v, err %v (want %v); request %s with %d vote(s), tool ran %d time(s)",
					res, err, tc.refused, req.Status, len(req.Votes), ran)
			}
			// Refused: nothing changed, the token is not spent.
			var head struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(tok, &head); err != nil {
				t.Fatal(err)
			}
			var consumed bool
			if err := w.Store.View(func(tx kernel.ReadTx) error {
				var err error
				consumed, err = tx.Consumed(head.ID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if consumed || len(req.Votes) != 0 || ran != 0 {
				t.Fatalf("a refused vote changed state: token consumed %v, %d vote(s) recorded, tool ran %d time(s)", consumed, len(req.Votes), ran)
			}
		})
	}
}
