package kernel_test

// A seeded, randomized concurrency stress of the kernel on the real bbolt
// store with a fake clock: agents call (allowed, denied, parked; retries
// of a request id with the same and with other arguments; cancels),
// approvers vote (approve, deny, amend, duplicate, replayed and untrusted
// tokens), the clock moves (deny / escalate / auto_approve_advisory
// deadlines), capabilities are revoked, the policy is reloaded (approvers
// and quorum) and standing approvals come and go, all at once. At the end
// the invariants of SPEC.md and the docs are checked against the store,
// the recorded dispatches and the exported, offline-verified log.
//
// CHIO_STRESS_SEEDS (comma-separated) and CHIO_STRESS_OPS (operations per
// agent and per voter, default 40) make a longer run:
//
//	CHIO_STRESS_SEEDS=1,2,3,4,5,6,7,8 CHIO_STRESS_OPS=400 go test -race -run TestStress ./kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
	"github.com/chiokernel/chio/receipt"
)

// stressPolicy: %[1]s the approvers block, %[2]d the quorum.
const stressPolicy = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9"
[[servers.tools]]
name = "free"
delivery = "at_most_once"
[[servers.tools]]
name = "refund_deny"
delivery = "at_most_once"
[[servers.tools]]
name = "refund_adv"
delivery = "at_most_once"
[[servers.tools]]
name = "refund_esc"
delivery = "at_most_once"
[[servers.tools]]
name = "batched"
delivery = "at_most_once"

[[grants]]
id = "free"
server = "pay"
tool = "free"

[[grants]]
id = "deny"
server = "pay"
tool = "refund_deny"
[grants.constraints]
require_approval_always = true
[grants.approval]
expose_arguments = true
timeout_seconds = 600
timeout_action = "deny"
quorum = %[2]d
%[1]s

[[grants]]
id = "adv"
server = "pay"
tool = "refund_adv"
[grants.constraints]
require_approval_always = true
[grants.approval]
expose_arguments = true
timeout_seconds = 600
timeout_action = "auto_approve_advisory"
quorum = %[2]d
%[1]s

[[grants]]
id = "esc"
server = "pay"
tool = "refund_esc"
[grants.constraints]
require_approval_always = true
[grants.approval]
expose_arguments = true
timeout_seconds = 600
timeout_action = "escalate"
quorum = %[2]d
%[1]s
[grants.approval.escalation]
terminal_action = "deny"
[[grants.approval.escalation.tiers]]
approvers = ["Finance Lead", "CFO"]
timeout_seconds = 600
[[grants.approval.escalation.tiers]]
approvers = ["CFO", "Finance Lead"]
timeout_seconds = 900

[[grants]]
id = "batched"
server = "pay"
tool = "batched"
[grants.constraints]
require_approval_always = true
[grants.approval]
expose_arguments = true
timeout_seconds = 600
%[1]s
`

var stressMallory = keys.FromSeed([]byte("mallory-mallory-mallory-mallory-"))

func stressPolicyFor(t *testing.T, withSRE bool, quorum int) *policy.Policy {
	t.Helper()
	ks := []keys.PrivateKey{financeLead, cfo}
	if withSRE {
		ks = append(ks, sre)
	}
	p, err := policy.Parse([]byte(fmt.Sprintf(stressPolicy, approversBlock(ks...), quorum)), "stress.toml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stressDispatcher records every delivery.
type stressDispatcher struct {
	mu   sync.Mutex
	runs map[string][]json.RawMessage
}

func (d *stressDispatcher) Dispatch(ctx context.Context, r kernel.DispatchRequest) (kernel.DispatchResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runs == nil {
		d.runs = map[string][]json.RawMessage{}
	}
	d.runs[r.RequestID] = append(d.runs[r.RequestID], bytes.Clone(r.Arguments))
	return kernel.DispatchResult{Output: json.RawMessage(`{"ok":true}`)}, nil
}

// stressCall is what an agent sent under one request id.
type stressCall struct {
	call  *kernel.ToolCall
	agent int
	capID string
	// other are parameter hashes the agent later sent under the same
	// request id with other arguments: none of them may ever run.
	other []string
}

// stressVote is a token an approver presented and the kernel accepted.
type stressVote struct {
	approvalID, approver, decision string
	amended                        json.RawMessage
}

type stressRun struct {
	t     *testing.T
	k     *kernel.Kernel
	w     *testkit.World
	clock *clock.Fake
	disp  *stressDispatcher
	log   *receipt.Log
	seq   atomic.Int64 // orders operations: starts and completions

	mu         sync.Mutex
	calls      map[string]*stressCall // request id ->
	parked     []string               // approval ids, every one ever parked
	parkedReq  map[string]string      // approval id -> request id
	caps       []string               // agent -> current capability raw (json)
	capRaw     [][]byte               // agent -> current capability
	revokedAt  map[string]int64       // capability id -> seq when Revoke returned
	submitAt   map[string]int64       // request id -> seq of its first Submit's start
	tokenAt    map[string]int64       // token id -> seq of its first presentation's start
	accepted   map[string]stressVote  // token id -> accepted vote
	usedTokens map[string][][]byte    // approval id -> raw tokens presented
	advances   []stressAdvance        // every Advance, in order
	batches    map[string]int64       // batch id -> max_calls
	// batchRevokedAt: batch id -> seq when its first RevokeBatch returned
	batchRevokedAt map[string]int64
	amendedFor     map[string]map[string]bool // request id -> canonical amended args accepted
	drained        map[string]string          // request id -> its state when the drain ended
	answers        map[string][]string        // request id -> what each Submit answered, in order
}

type stressAdvance struct {
	start int64
	to    time.Time
}

func stressOps() int {
	if n, err := strconv.Atoi(os.Getenv("CHIO_STRESS_OPS")); err == nil && n > 0 {
		return n
	}
	return 40
}

func stressSeeds() []int64 {
	seeds := []int64{1, 2, 3, 30} // 1, 2 and 30 once found defects
	if s := os.Getenv("CHIO_STRESS_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err == nil {
				seeds = append(seeds, n)
			}
		}
	}
	return seeds
}

func TestStressConcurrentInvariants(t *testing.T) {
	for _, seed := range stressSeeds() {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runStress(t, seed, stressOps()) })
	}
}

const stressAgents = 3

var stressAgentKeys = func() []keys.PrivateKey {
	var ks []keys.PrivateKey
	for i := 0; i < stressAgents; i++ {
		ks = append(ks, keys.FromSeed(bytes.Repeat([]byte{byte('a' + i)}, 32)))
	}
	return ks
}()

func runStress(t *testing.T, seed int64, ops int) {
	kkey := keys.FromSeed(bytes.Repeat([]byte{9}, 32))
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	s := &stressRun{t: t, clock: fake, disp: &stressDispatcher{},
		calls: map[string]*stressCall{}, parkedReq: map[string]string{}, revokedAt: map[string]int64{}, submitAt: map[string]int64{},
		tokenAt: map[string]int64{}, answers: map[string][]string{}, batchRevokedAt: map[string]int64{}, accepted: map[string]stressVote{}, usedTokens: map[string][][]byte{}, batches: map[string]int64{},
		amendedFor: map[string]map[string]bool{}}
	s.log = receipt.NewLog(kkey, receipt.LogOptions{Interval: time.Hour, Now: fake.Now})
	s.w = testkit.NewWorld(t, testkit.Options{Policy: stressPolicyFor(t, true, 1), Clock: fake, Dispatcher: s.disp,
		KernelKey: testkit.Key(kkey), Log: s.log})
	s.k = s.w.Kernel
	for i := 0; i < stressAgents; i++ {
		s.capRaw = append(s.capRaw, nil)
		s.caps = append(s.caps, "")
		s.issue(i)
	}

	ctx := context.Background()
	var workers, background sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < stressAgents; i++ {
		workers.Add(1)
		go func(i int) {
			defer workers.Done()
			r := rand.New(rand.NewSource(seed*100 + int64(i)))
			for n := 0; n < ops; n++ {
				s.agentOp(ctx, r, i)
			}
		}(i)
	}
	for v := 0; v < 2; v++ {
		workers.Add(1)
		go func(v int) {
			defer workers.Done()
			r := rand.New(rand.NewSource(seed*100 + 50 + int64(v)))
			for n := 0; n < ops*2; n++ {
				s.voteOp(ctx, r)
			}
		}(v)
	}
	background.Add(1)
	go func() {
		defer background.Done()
		r := rand.New(rand.NewSource(seed*100 + 90))
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.chaosOp(ctx, r)
			time.Sleep(time.Duration(r.Intn(3)) * time.Millisecond)
		}
	}()
	workers.Wait()
	close(stop)
	background.Wait()

	s.drain(ctx)
	s.check(ctx)
}

// issue gives agent i a fresh capability.
func (s *stressRun) issue(i int) {
	raw, c, err := s.k.IssueCapability(stressAgentKeys[i].Public(), []string{"free", "deny", "adv", "esc", "batched"}, 48*time.Hour)
	if err != nil {
		s.t.Error(err)
		return
	}
	s.mu.Lock()
	s.capRaw[i], s.caps[i] = raw, c.ID
	s.mu.Unlock()
}

var stressTools = []string{"free", "nope", "refund_deny", "refund_deny", "refund_adv", "refund_esc", "refund_esc", "batched", "batched"}

func (s *stressRun) agentOp(ctx context.Context, r *rand.Rand, i int) {
	s.mu.Lock()
	capRaw, capID := s.capRaw[i], s.caps[i]
	var mine []string
	for id, c := range s.calls {
		if c.agent == i {
			mine = append(mine, id)
		}
	}
	sort.Strings(mine)
	var myParked []string
	for _, a := range s.parked {
		if c := s.calls[s.parkedReq[a]]; c.agent == i {
			myParked = append(myParked, a)
		}
	}
	s.mu.Unlock()
	agent := stressAgentKeys[i]
	switch op := r.Intn(10); {
	case op < 6 || len(mine) == 0: // a new call
		tool := stressTools[r.Intn(len(stressTools))]
		args := fmt.Sprintf(`{"amount":%d,"note":"n%d"}`, 1+r.Intn(500), r.Intn(1000))
		c := testkit.NewCall(s.t, agent, capRaw, "pay", tool, args, "", s.clock.Now())
		s.mu.Lock()
		s.calls[c.RequestID] = &stressCall{call: c, agent: i, capID: capID}
		s.mu.Unlock()
		s.submit(ctx, c)
	case op < 8: // the same call again, proof signed anew
		s.mu.Lock()
		orig := s.calls[mine[r.Intn(len(mine))]].call
		s.mu.Unlock()
		c := *orig
		testkit.Sign(s.t, &c, agent, s.clock.Now())
		s.submit(ctx, &c)
	case op < 9: // the same request id with other arguments
		s.mu.Lock()
		sc := s.calls[mine[r.Intn(len(mine))]]
		c := *sc.call
		s.mu.Unlock()
		c.Arguments = json.RawMessage(fmt.Sprintf(`{"amount":%d,"evil":true}`, 1+r.Intn(500)))
		ph, err := kernel.ParameterHash(c.Server, c.Tool, c.Arguments, nil)
		if err != nil {
			s.t.Error(err)
			return
		}
		testkit.Sign(s.t, &c, agent, s.clock.Now())
		// A Submit refused before authentication (a proof gone stale as
		// the clock moved, too many calls in flight) records nothing and
		// leaves the request id unused (Submit): this is then its call.
		_, err = s.k.Call(c.RequestID)
		s.mu.Lock()
		if errors.Is(err, kernel.ErrNotFound) {
			sc.call = &c
		} else {
			sc.other = append(sc.other, ph)
		}
		s.mu.Unlock()
		s.submit(ctx, &c)
	default: // cancel one of my parked calls
		if len(myParked) == 0 {
			return
		}
		s.k.Cancel(ctx, myParked[r.Intn(len(myParked))], "changed my mind", kernel.CancelledByAgent)
	}
}

func (s *stressRun) submit(ctx context.Context, c *kernel.ToolCall) {
	start := s.seq.Add(1)
	s.mu.Lock()
	if _, ok := s.submitAt[c.RequestID]; !ok {
		s.submitAt[c.RequestID] = start
	}
	s.mu.Unlock()
	out, err := s.k.Submit(ctx, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	if out != nil {
		s.answers[c.RequestID] = append(s.answers[c.RequestID], fmt.Sprintf("%s %s %s", out.Status, out.Guard, out.Reason))
	} else {
		s.answers[c.RequestID] = append(s.answers[c.RequestID], fmt.Sprintf("error %v", err))
	}
	if err != nil || out.Status != kernel.StatusPendingApproval || out.ApprovalRequestID == "" {
		return
	}
	if _, ok := s.parkedReq[out.ApprovalRequestID]; !ok {
		s.parked = append(s.parked, out.ApprovalRequestID)
		s.parkedReq[out.ApprovalRequestID] = c.RequestID
	}
}

func (s *stressRun) voteOp(ctx context.Context, r *rand.Rand) {
	s.mu.Lock()
	if len(s.parked) == 0 {
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		return
	}
	// Mostly recent requests, sometimes any (late votes on ended ones).
	n := len(s.parked)
	idx := n - 1 - r.Intn(min(n, 6))
	if r.Intn(5) == 0 {
		idx = r.Intn(n)
	}
	id := s.parked[idx]
	used := s.usedTokens[id]
	agent := s.calls[s.parkedReq[id]].agent
	s.mu.Unlock()

	var raw []byte
	if len(used) > 0 && r.Intn(8) == 0 {
		raw = used[r.Intn(len(used))] // a replay
	} else {
		signers := []keys.PrivateKey{financeLead, cfo, sre, financeLead, cfo, stressMallory, stressAgentKeys[agent]}
		key := signers[r.Intn(len(signers))]
		decision := approval.DecisionApproved
		if r.Intn(6) == 0 {
			decision = approval.DecisionDenied
		}
		req, err := s.k.Approval(id)
		if err != nil {
			s.t.Errorf("approval %s: %v", id, err)
			return
		}
		tok := approval.NewToken(req, key.Public(), decision, s.clock.Now(), 10*time.Minute)
		if decision == approval.DecisionApproved && r.Intn(4) == 0 {
			tok.AmendedArguments = json.RawMessage(fmt.Sprintf(`{"amount":%d,"note":"amended"}`, 1+r.Intn(100)))
		}
		if raw, err = tok.Sign(key); err != nil {
			s.t.Error(err)
			return
		}
	}
	var tok approval.Token
	if err := json.Unmarshal(raw, &tok); err != nil {
		s.t.Error(err)
		return
	}
	start := s.seq.Add(1)
	s.mu.Lock()
	if _, ok := s.tokenAt[tok.ID]; !ok {
		s.tokenAt[tok.ID] = start
	}
	s.usedTokens[id] = append(s.usedTokens[id], raw)
	s.mu.Unlock()
	_, err := s.k.Respond(ctx, id, raw, "", "stress")
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, replay := s.accepted[tok.ID]; replay {
		s.t.Errorf("token %s (approver %s) was accepted twice on %s and %s", tok.ID, tok.Approver, prev.approvalID, id)
	}
	if tok.Approver == stressMallory.Public().String() || tok.Approver == stressAgentKeys[agent].Public().String() {
		s.t.Errorf("a token of an untrusted key %s was accepted on %s", tok.Approver, id)
	}
	s.accepted[tok.ID] = stressVote{approvalID: id, approver: tok.Approver, decision: tok.Decision, amended: tok.AmendedArguments}
	if len(tok.AmendedArguments) > 0 {
		rid := s.parkedReq[id]
		if s.amendedFor[rid] == nil {
			s.amendedFor[rid] = map[string]bool{}
		}
		s.amendedFor[rid][canonJSON(s.t, tok.AmendedArguments)] = true
	}
}

// chaosOp moves the clock, revokes a capability, reloads the policy, or
// creates or revokes a standing approval.
func (s *stressRun) chaosOp(ctx context.Context, r *rand.Rand) {
	switch op := r.Intn(10); {
	case op < 4:
		start := s.seq.Add(1)
		to := s.clock.Now().Add(time.Duration(r.Intn(150)) * time.Second)
		s.mu.Lock()
		s.advances = append(s.advances, stressAdvance{start: start, to: to})
		s.mu.Unlock()
		s.clock.Set(to)
	case op < 5:
		i := r.Intn(stressAgents)
		s.mu.Lock()
		capID := s.caps[i]
		s.mu.Unlock()
		if err := s.k.Revoke(ctx, capID); err != nil {
			s.t.Errorf("revoke %s: %v", capID, err)
			return
		}
		done := s.seq.Add(1)
		s.mu.Lock()
		s.revokedAt[capID] = done
		s.mu.Unlock()
		s.issue(i)
	case op < 7:
		if err := s.k.ApplyPolicy(ctx, stressPolicyFor(s.t, r.Intn(2) == 0, 1+r.Intn(2))); err != nil {
			s.t.Errorf("reload: %v", err)
		}
	case op < 9:
		signer := []keys.PrivateKey{financeLead, cfo}[r.Intn(2)]
		max := int64(1 + r.Intn(3))
		now := s.clock.Now()
		bt := &approval.BatchToken{Schema: approval.BatchSchema, ID: approval.NewBatchID(), Approver: signer.Public().String(),
			Audience: s.k.PublicKey().String(), ServerPattern: "pay", ToolPattern: "batched", MaxCalls: &max,
			NotBefore: now.Unix(), NotAfter: now.Add(5 * time.Minute).Unix()}
		raw, err := bt.Sign(signer)
		if err != nil {
			s.t.Error(err)
			return
		}
		if _, err := s.k.CreateBatch(ctx, raw); err == nil {
			s.mu.Lock()
			s.batches[bt.ID] = max
			s.mu.Unlock()
		}
	default:
		s.mu.Lock()
		var ids []string
		for id := range s.batches {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		if len(ids) > 0 {
			sort.Strings(ids)
			id := ids[r.Intn(len(ids))]
			if err := s.k.RevokeBatch(ctx, id); err == nil {
				done := s.seq.Add(1)
				s.mu.Lock()
				if _, ok := s.batchRevokedAt[id]; !ok {
					s.batchRevokedAt[id] = done
				}
				s.mu.Unlock()
			}
		}
	}
}

// drain moves the clock until nothing waits: every deadline, escalation
// tier and terminal action has fired.
func (s *stressRun) drain(ctx context.Context) {
	for round := 0; ; round++ {
		s.k.WaitSettles()
		pending, err := s.k.ListPending(kernel.PendingFilter{Limit: 1000})
		if err != nil {
			s.t.Fatal(err)
		}
		if len(pending) == 0 && !s.anyInFlight() {
			break
		}
		if round > 3000 {
			s.t.Fatalf("after %d rounds, %d approval requests are still pending, calls in flight: %v", round, len(pending), s.anyInFlight())
		}
		start := s.seq.Add(1)
		to := s.clock.Now().Add(time.Hour)
		s.mu.Lock()
		s.advances = append(s.advances, stressAdvance{start: start, to: to})
		s.mu.Unlock()
		s.clock.Set(to)
		time.Sleep(2 * time.Millisecond)
	}
	s.k.WaitSettles()
}

// anyInFlight reports whether a call waits for a human or its delivery.
func (s *stressRun) anyInFlight() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drained = map[string]string{}
	for rid := range s.calls {
		rec, err := s.k.Call(rid)
		if err == nil && kernel.InFlight(rec.Status) {
			return true
		}
		if err == nil {
			s.drained[rid] = fmt.Sprintf("%s %s approval %s", rec.Status, rec.ReceiptID, rec.ApprovalID)
			if req, err := s.k.Approval(rec.ApprovalID); err == nil {
				s.drained[rid] += fmt.Sprintf(" %s %+v", req.Status, req.Resolution)
			}
		} else {
			s.drained[rid] = err.Error()
		}
	}
	return false
}

func canonJSON(t *testing.T, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Errorf("amended arguments %s: %v", raw, err)
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (s *stressRun) check(ctx context.Context) {
	t := s.t
	pub := s.k.PublicKey()
	// Every receipt, decoded, grouped by request id.
	byReq := map[string][]*receipt.Receipt{}
	var total int
	s.w.Store.View(func(tx kernel.ReadTx) error {
		// Every stored receipt, not 1..LastSeq(): bbolt's LastSeq is the
		// seq acknowledged after the commit returns, so a read just after a
		// commit can see its records (and the drain above end) while
		// LastSeq still names the seq before it.
		return tx.Receipts(1, math.MaxUint64, func(seq uint64, raw []byte) bool {
			r, err := receipt.Verify(raw, pub)
			if err != nil {
				t.Errorf("receipt seq %d: %v", seq, err)
				return true
			}
			byReq[r.RequestID] = append(byReq[r.RequestID], r)
			total++
			return true
		})
	})
	s.disp.mu.Lock()
	runs := s.disp.runs
	s.disp.mu.Unlock()

	stats := map[string]int{}
	for rid, sc := range s.calls {
		rec, err := s.k.Call(rid)
		if errors.Is(err, kernel.ErrNotFound) {
			if len(runs[rid]) > 0 || len(byReq[rid]) > 0 {
				t.Errorf("%s: no call record, but %d runs and %d receipts", rid, len(runs[rid]), len(byReq[rid]))
			}
			stats["unrecorded"]++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", rid, err)
			continue
		}
		stats[rec.Status]++
		var allows []*receipt.Receipt
		for _, r := range byReq[rid] {
			if r.Decision.Verdict == receipt.Allow {
				allows = append(allows, r)
			}
		}
		ran := runs[rid]
		// at_most_once, no crash: at most one delivery, and exactly when
		// there is one durable allow decision.
		if len(ran) > 1 {
			t.Errorf("%s (%s): the tool ran %d times", rid, sc.call.Tool, len(ran))
		}
		if len(ran) > 0 && len(allows) != 1 {
			t.Errorf("%s (%s): the tool ran with %d allow receipts", rid, sc.call.Tool, len(allows))
		}
		if len(ran) == 0 && len(allows) != 0 {
			t.Errorf("%s (%s): %d allow receipts but the tool never ran (status %s)", rid, sc.call.Tool, len(allows), rec.Status)
		}
		if kernel.InFlight(rec.Status) {
			t.Errorf("%s (%s): still %s after the drain", rid, sc.call.Tool, rec.Status)
		}
		if (rec.Status == kernel.StatusAllowed) != (len(ran) == 1) {
			t.Errorf("%s (%s): call status %s, ran %d times", rid, sc.call.Tool, rec.Status, len(ran))
		}
		// The latest receipt the call names is the last of its chain.
		if n := len(byReq[rid]); n > 0 && rec.ReceiptID != byReq[rid][n-1].ID {
			var chain []string
			for _, r := range byReq[rid] {
				chain = append(chain, fmt.Sprintf("%d:%s:%s", r.Seq, r.ID, r.Decision.Verdict))
			}
			var extra string
			s.w.Store.View(func(tx kernel.ReadTx) error {
				raw, err := tx.Receipt(rec.ReceiptID)
				if err != nil {
					extra = err.Error()
					return nil
				}
				r, err := receipt.Verify(raw, pub)
				extra = fmt.Sprintf("lastseq %d; named: %+v %v", tx.LastSeq(), r, err)
				return nil
			})
			t.Errorf("%s: the call names receipt %s, its receipts are %v; %s; at the drain's end: %s", rid, rec.ReceiptID, chain, extra, s.drained[rid])
		}
		if len(ran) != 1 || len(allows) != 1 {
			s.checkEnded(rid, rec, byReq[rid])
			continue
		}
		allow := allows[0]
		if rec.DecisionReceiptID != allow.ID {
			t.Errorf("%s: decision receipt %s, allow receipt %s", rid, rec.DecisionReceiptID, allow.ID)
		}
		// What ran is what the allow receipt says ran.
		ph, err := kernel.ParameterHash(sc.call.Server, sc.call.Tool, ran[0], nil)
		if err != nil || ph != allow.ParameterHash {
			t.Errorf("%s: ran %s (hash %s, %v), allow receipt binds %s", rid, ran[0], ph, err, allow.ParameterHash)
		}
		for _, o := range sc.other {
			if o == ph {
				t.Errorf("%s (%s): ran the arguments of a retry with other arguments: %s; Submit answered %q", rid, sc.call.Tool, ran[0], s.answers[rid])
			}
		}
		orig := canonJSON(t, sc.call.Arguments)
		if got := canonJSON(t, ran[0]); got != orig && !s.amendedFor[rid][got] {
			t.Errorf("%s: ran %s, neither the agent's %s nor an accepted amendment", rid, got, orig)
		}
		// The decisive operation started after the capability's revocation
		// returned: the call must not have run.
		decisive := s.decisiveStart(rid, sc, allow)
		if at, ok := s.revokedAt[sc.capID]; ok && decisive > 0 && at < decisive {
			t.Errorf("%s: ran on capability %s revoked (seq %d) before its deciding operation started (seq %d); allow metadata %v",
				rid, sc.capID, at, decisive, allow.Metadata)
		}
		s.checkApproved(rid, rec, allow, ran[0])
	}

	// Standing approvals never ran more calls than max_calls.
	perBatch := map[string]int{}
	for rid, rs := range byReq {
		for _, r := range rs {
			if b, ok := r.Metadata["batch_approval_id"].(string); ok && r.Decision.Verdict == receipt.Allow {
				perBatch[b]++
				// A call that arrived after its batch's revocation returned
				// is not allowed by it.
				if at, ok := s.batchRevokedAt[b]; ok && at < s.submitAt[rid] {
					t.Errorf("%s: allowed by batch %s revoked (seq %d) before the call arrived (seq %d)", rid, b, at, s.submitAt[rid])
				}
			}
		}
	}
	for id, n := range perBatch {
		if max, ok := s.batches[id]; !ok || int64(n) > max {
			t.Errorf("batch %s (created: %v, max_calls %d) allowed %d calls", id, ok, max, n)
		}
	}

	// Pending counters back to zero.
	s.w.Store.View(func(tx kernel.ReadTx) error {
		for _, a := range stressAgentKeys {
			n, err := tx.Counter("pending\x00" + a.Public().String())
			if err != nil || n != 0 {
				t.Errorf("pending counter of agent %s: %d (%v) with nothing pending", a.Public(), n, err)
			}
		}
		return nil
	})

	// The whole log verifies offline.
	if _, _, err := s.log.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.w.Store.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	exp := bytes.Clone(buf.Bytes())
	rep, err := receipt.VerifyExport(&buf, receipt.VerifyOptions{KernelKey: pub})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var ps []string
		for _, p := range rep.Problems {
			ps = append(ps, p.String())
		}
		if dir := os.Getenv("CHIO_STRESS_DUMP"); dir != "" {
			os.WriteFile(fmt.Sprintf("%s/%s.jsonl", dir, strings.ReplaceAll(t.Name(), "/", "_")), exp, 0o600)
		}
		t.Errorf("receipt verify: %d problems:\n%s", rep.ProblemCount, strings.Join(ps, "\n"))
	}
	if rep.Pending != 0 {
		t.Errorf("receipt verify: %d approval chains without a final receipt", rep.Pending)
	}
	t.Logf("%d calls %v, %d receipts, %d approval requests, %d accepted votes, %d batches, %d revocations, %d advances, %d chains",
		len(s.calls), stats, total, len(s.parked), len(s.accepted), len(s.batches), len(s.revokedAt), len(s.advances), rep.Chains)
}

// decisiveStart is the seq at which the operation that decided an allowed
// call started (0 if unknown): its Submit, the vote whose token the
// receipt names, or the first clock move past its deadline.
func (s *stressRun) decisiveStart(rid string, sc *stressCall, allow *receipt.Receipt) int64 {
	if tid, ok := allow.Metadata["approval_token_id"].(string); ok {
		if at, ok := s.tokenAt[tid]; ok {
			return at
		}
		if allow.Metadata["auto_approved"] == true {
			aid, _ := allow.Metadata["approval_request_id"].(string)
			req, err := s.k.Approval(aid)
			if err != nil {
				s.t.Errorf("%s: %v", rid, err)
				return 0
			}
			for _, a := range s.advances {
				if !a.to.Before(time.Unix(req.ExpiresAt, 0)) {
					return a.start
				}
			}
			return 0
		}
		s.t.Errorf("%s: allowed by token %s, which no approver here presented", rid, tid)
		return 0
	}
	return s.submitAt[rid]
}

// checkApproved: a parked call that ran had its quorum of distinct
// approvers (or the kernel's advisory vote), and its approval record,
// call record and receipts agree.
func (s *stressRun) checkApproved(rid string, rec *kernel.CallRecord, allow *receipt.Receipt, ran json.RawMessage) {
	t := s.t
	aid, _ := allow.Metadata["approval_request_id"].(string)
	if aid == "" {
		if _, batch := allow.Metadata["batch_approval_id"]; !batch && rec.ApprovalID != "" {
			t.Errorf("%s: parked as %s but allowed without an approval chain", rid, rec.ApprovalID)
		}
		if _, batch := allow.Metadata["batch_approval_id"]; !batch && s.calls[rid].call.Tool != "free" {
			t.Errorf("%s (%s): allowed with neither an approval nor a standing approval: %v", rid, s.calls[rid].call.Tool, allow.Metadata)
		}
		return
	}
	req, err := s.k.Approval(aid)
	if err != nil {
		t.Errorf("%s: approval %s: %v", rid, aid, err)
		return
	}
	if req.Status != approval.StatusApproved || req.Resolution == nil || req.Resolution.CallStatus != kernel.StatusAllowed {
		t.Errorf("%s: ran, but approval %s is %s (resolution %+v)", rid, aid, req.Status, req.Resolution)
	}
	if allow.Metadata["auto_approved"] == true {
		return
	}
	approvers := map[string]bool{}
	for _, v := range req.Votes {
		if v.Decision != approval.DecisionApproved {
			continue
		}
		acc, ok := s.accepted[v.TokenID]
		if !ok || acc.approvalID != aid || acc.approver != v.Approver {
			t.Errorf("%s: approval %s counts vote %s by %s that no Respond accepted", rid, aid, v.TokenID, v.Approver)
		}
		approvers[v.Approver] = true
	}
	if len(approvers) < req.Quorum || req.Quorum < 1 {
		t.Errorf("%s: ran with %d distinct approvers, quorum %d", rid, len(approvers), req.Quorum)
	}
	tid, _ := allow.Metadata["approval_token_id"].(string)
	if am := s.accepted[tid].amended; len(am) > 0 && canonJSON(t, am) != canonJSON(t, ran) {
		t.Errorf("%s: the deciding token amended to %s, the tool ran %s", rid, am, ran)
	}
}

// checkEnded: a call that did not run ended denied or cancelled, and its
// approval record (if parked) and last receipt agree.
func (s *stressRun) checkEnded(rid string, rec *kernel.CallRecord, rs []*receipt.Receipt) {
	t := s.t
	if len(rs) == 0 {
		t.Errorf("%s: status %s with no receipt", rid, rec.Status)
		return
	}
	last := rs[len(rs)-1]
	want := map[string]string{kernel.StatusDenied: receipt.Deny, kernel.StatusCancelled: receipt.Cancelled}[rec.Status]
	if want == "" || last.Decision.Verdict != want {
		t.Errorf("%s: status %s, last receipt %s", rid, rec.Status, last.Decision.Verdict)
	}
	if rec.ApprovalID == "" {
		return
	}
	req, err := s.k.Approval(rec.ApprovalID)
	if err != nil {
		t.Errorf("%s: approval %s: %v", rid, rec.ApprovalID, err)
		return
	}
	ok := map[string][]string{
		kernel.StatusDenied:    {approval.StatusDenied, approval.StatusExpired, approval.StatusApproved},
		kernel.StatusCancelled: {approval.StatusCancelled},
	}[rec.Status]
	found := false
	for _, st := range ok {
		found = found || req.Status == st
	}
	if !found || req.Resolution == nil || req.Resolution.CallStatus != rec.Status {
		t.Errorf("%s: call %s, approval %s is %s (resolution %+v)", rid, rec.Status, req.ApprovalID, req.Status, req.Resolution)
	}
}
