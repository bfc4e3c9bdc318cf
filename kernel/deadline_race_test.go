package kernel_test

// Regressions found by a review of this session's fixes: the advisory
// auto-approval and routed guards, a denial racing the advisory vote, and
// the text rule's treatment of joiners.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// Only a person answers a routed guard: the kernel's own advisory vote at a
// deadline (auto_approve_advisory) must not lift a forbidden_paths deny the
// grant routed to a human (the first version of that rule let it, and an
// unanswered delete under /etc/** ran at the deadline).
func TestAutoApproveNeverLiftsARoutedDeny(t *testing.T) {
	f := deadlineFixture(t, `
[[servers]]
id = "demo"
transport = "builtin"
[[grants]]
id = "files"
server = "demo"
tool = "delete_file"
[grants.constraints]
forbidden_paths = ["/etc/**"]
on_trigger = { forbidden_paths = "require_approval" }
[grants.approval]
timeout_seconds = 600
timeout_action = "auto_approve_advisory"
[[grants.approval.approvers]]
public_key = "%[1]s"
display_name = "Finance Lead"
`, "files")
	ctx := context.Background()
	out, err := f.k.Submit(ctx, f.call(t, "delete_file", `{"path":"/etc/passwd"}`, ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v %v", out, err)
	}
	f.clock.Advance(600 * time.Second)
	eventually(t, "deadline handled", func() bool { r, _ := f.k.Approval(out.ApprovalRequestID); return r.Status != approval.StatusPending })
	f.k.WaitSettles()
	rec, _ := f.k.Call(out.RequestID)
	if n := f.disp.count(out.RequestID); n != 0 || rec.Status == kernel.StatusAllowed {
		t.Fatalf("no human answered a forbidden_paths deny routed to a human, yet at the deadline the kernel's advisory vote ran it: "+
			"dispatched %d, status %s (guard %q)", n, rec.Status, rec.Guard)
	}
}

// gateStore holds chosen Updates (by number, from 1) until their gate is
// opened.
type gateStore struct {
	kernel.Store
	n     atomic.Int64
	mu    sync.Mutex
	gates map[int64]chan struct{}
	seen  map[int64]chan struct{}
}

func (s *gateStore) gate(n int64) (reached, open chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gates[n], s.seen[n] = make(chan struct{}), make(chan struct{})
	return s.seen[n], s.gates[n]
}

func (s *gateStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	n := s.n.Add(1)
	s.mu.Lock()
	g, seen := s.gates[n], s.seen[n]
	s.mu.Unlock()
	if g != nil {
		close(seen)
		<-g
	}
	return s.Store.Update(ctx, fn)
}

// A human denial that commits between advisoryMayDecide (which checks "no human
// denied") and the kernel's advisory vote is not overridden: the vote's
// own transaction checks again, and the deadline denies. One kernel waits
// for the votes that arrived before the deadline (arrivals.go), so the
// denial here is another replica's, committed to the shared store.
func TestHumanDenialLandingBeforeTheAdvisoryVoteStands(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	gs := &gateStore{gates: map[int64]chan struct{}{}, seen: map[int64]chan struct{}{}}
	tool := &scriptedTool{}
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(`
[[servers]]
id = "pay"
transport = "builtin"
[[grants]]
id = "deploys"
server = "pay"
tool = "echo"
[grants.constraints]
require_approval_always = true
[grants.approval]
timeout_seconds = 600
timeout_action = "auto_approve_advisory"
deny_quorum = 2
[[grants.approval.approvers]]
public_key = "%s"
display_name = "Finance Lead"
[[grants.approval.approvers]]
public_key = "%s"
display_name = "CFO"
`, financeLead.Public(), cfo.Public()), Dispatcher: tool, Clock: clk,
		Server: "pay", Grants: []string{"deploys"},
		WrapStore: func(s kernel.Store) kernel.Store { gs.Store = s; return gs }})
	out := w.Submit(t, "echo", `{"env":"production"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%+v", out)
	}
	id := out.ApprovalRequestID
	kernelAt, kernelGo := gs.gate(gs.n.Load() + 2) // the kernel's advisory vote commit (after advisoryMayDecide)
	clk.Advance(599 * time.Second)                 // the human signs just before the deadline
	deny := w.Token(t, id, financeLead, approval.DecisionDenied, nil)
	var tok approval.Token
	if err := json.Unmarshal(deny, &tok); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second) // the deadline: advisoryMayDecide checks (no denial yet)
	select {
	case <-kernelAt:
	case <-time.After(5 * time.Second):
		t.Fatal("the advisory vote never reached its commit")
	}
	// The human's denial lands now, recorded by another replica.
	err := gs.Store.Update(context.Background(), func(tx kernel.Tx) error {
		req, err := tx.Approval(id)
		if err != nil {
			return err
		}
		if err := tx.Consume(tok.ID, id); err != nil {
			return err
		}
		req.Votes = append(req.Votes, approval.Vote{Approver: tok.Approver, DisplayName: "Finance Lead", TokenID: tok.ID,
			Decision: tok.Decision, Channel: kernel.ChannelAPI, At: clk.Now().Unix() - 1, Token: deny})
		return tx.PutApproval(req)
	})
	if err != nil {
		t.Fatalf("the human's denial: %v", err)
	}
	close(kernelGo)
	eventually(t, "request resolved", func() bool { r, _ := w.Kernel.Approval(id); return r.Status != approval.StatusPending })
	w.Kernel.WaitSettles()
	rec, _ := w.Kernel.Call(out.RequestID)
	if n := len(tool.deliveries(out.RequestID)); n != 0 || rec.Status == kernel.StatusAllowed {
		r, _ := w.Kernel.Approval(id)
		var votes []string
		for _, v := range r.Votes {
			votes = append(votes, v.DisplayName+"="+v.Decision)
		}
		t.Fatalf("a human denied this call, yet the advisory auto-approval ran it: dispatched %d, status %s, votes %v",
			n, rec.Status, votes)
	}
}

// The text rule refuses format characters that reorder or hide, not those
// ordinary text needs: ZERO WIDTH NON-JOINER (Persian, Urdu and Indic
// spelling), ZERO WIDTH JOINER (emoji sequences such as 👨‍👩‍👧) and the tag
// characters of emoji flags. These park as before.
func TestShownTextAcceptsJoinersAndEmojiTags(t *testing.T) {
	f := newFixture(t)
	amount := map[string]any{"units": 450, "currency": "USD"}
	for i, purpose := range []string{
		"بازپرداخت سفارش‌ها 8834",                                                       // Persian, ZWNJ
		"रिफ़ंड क्‍लाइंट 8834",                                                          // Hindi, ZWJ (virama + ZWJ)
		"family plan 👨\u200d👩\u200d👧 refund",                                            // emoji ZWJ sequence
		"Scotland 🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f office", // emoji tag sequence
	} {
		raw, _ := json.Marshal(map[string]any{"purpose": purpose, "max_amount": amount})
		out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","n":%d}`, i), string(raw)))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Errorf("%q refused: %v", purpose, err)
		}
	}
}
