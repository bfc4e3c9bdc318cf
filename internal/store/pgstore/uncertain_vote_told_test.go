package pgstore_test

// Votes that neither approve nor leave their call to run: a denial and a
// vote below the quorum. When such a vote's COMMIT lands but its answer is
// lost, whatever learns that it committed (the replica's sweep, or the
// vote presented again) must tell channels and live views what its answer
// would have made the kernel tell them, once.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/store/pgstore"
	"github.com/chiokernel/chio/internal/store/pgstore/pgtest"
	"github.com/chiokernel/chio/internal/store/storetest"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
	"github.com/chiokernel/chio/policy"
)

// voteLostStore is approvingVoteLostStore for any vote: the next commit
// that spends an approval token (a vote) succeeds in the database but is
// reported failed (lose), or fails before it reaches the database (fail).
type voteLostStore struct {
	*pgstore.Store
	lose, fail atomic.Bool
}

type votingTx struct {
	kernel.Tx
	voted bool
}

func (t *votingTx) Consume(tokenID, approvalID string) error {
	err := t.Tx.Consume(tokenID, approvalID)
	t.voted = err == nil
	return err
}

func (s *voteLostStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	var voted bool
	err := s.Store.Update(ctx, func(tx kernel.Tx) error {
		w := &votingTx{Tx: tx}
		if err := fn(w); err != nil {
			return err
		}
		if voted = w.voted; voted && s.fail.CompareAndSwap(true, false) {
			return errInjected // nothing of this function is written
		}
		return nil
	})
	if errors.Is(err, errInjected) {
		return fmt.Errorf("%w: %v", kernel.ErrUnavailable, err)
	}
	if err == nil && voted && s.lose.CompareAndSwap(true, false) {
		return fmt.Errorf("%w: connection reset while COMMIT was answered", kernel.ErrUnavailable)
	}
	return err
}

// toldChannels is a Notifier (what Slack, email and webhooks hear).
type toldChannels struct {
	mu   sync.Mutex
	told []string // "event approval_id status"
}

func (n *toldChannels) Notify(event string, req *approval.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.told = append(n.told, event+" "+req.ApprovalID+" "+req.Status)
}

func (n *toldChannels) count(line string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, l := range n.told {
		if l == line {
			c++
		}
	}
	return c
}

// liveView collects what a dashboard's live stream receives.
type liveView struct {
	mu     sync.Mutex
	events []kernel.Event
}

func watch(t *testing.T, k *kernel.Kernel) *liveView {
	t.Helper()
	events, cancel, ok := k.Subscribe(kernel.PoolStream)
	if !ok {
		t.Fatal("cannot subscribe")
	}
	v := &liveView{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range events {
			v.mu.Lock()
			v.events = append(v.events, e)
			v.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return v
}

// count counts the events of type typ about approval id (an approval
// event) or its call (a call event) that match.
func (v *liveView) count(typ, id string, match func(kernel.Event) bool) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, e := range v.events {
		about := e.Approval != nil && e.Approval.ApprovalID == id || e.Call != nil && e.Call.ApprovalRequestID == id
		if e.Type == typ && about && (match == nil || match(e)) {
			n++
		}
	}
	return n
}

// toldWorld is one replica on PostgreSQL behind voteLostStore, with its
// channels recorded and its HTTP API served (for long-polls).
type toldWorld struct {
	k     *kernel.Kernel
	st    *voteLostStore
	told  *toldChannels
	api   *httptest.Server
	clk   *clock.Fake
	agent keys.PrivateKey
	cap   []byte
}

func newToldWorld(t *testing.T, p *policy.Policy, grant string) *toldWorld {
	t.Helper()
	pg := openPG(t, pgtest.Database(t))
	w := &toldWorld{st: &voteLostStore{Store: pg}, told: &toldChannels{}, clk: clock.NewFake(time.Now()),
		agent: keys.FromSeed([]byte("agent-agent-agent-agent-agent-32"))}
	k, err := kernel.New(kernel.Config{Key: storetest.Key(), Policy: p, Store: w.st, Dispatcher: &countingDispatcher{calls: map[string]int{}},
		Clock: w.clk, Relay: pg.Events(), Notifier: w.told})
	if err != nil {
		t.Fatal(err)
	}
	pg.Events().Attach(k)
	t.Cleanup(k.Close)
	if err := k.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.k = k
	api, err := httpapi.New(httpapi.Config{Kernel: k, Store: w.st, AdminToken: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	w.api = httptest.NewServer(api)
	t.Cleanup(w.api.Close)
	if w.cap, _, err = k.IssueCapability(w.agent.Public(), []string{grant}, time.Hour); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *toldWorld) park(t *testing.T, tool, args string) *kernel.Outcome {
	t.Helper()
	out, err := w.k.Submit(context.Background(), testkit.NewCall(t, w.agent, w.cap, "demo", tool, args, "", w.clk.Now()))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v %v", out, err)
	}
	return out
}

// longPoll is `chio await` (GET /v1/calls/{id}?wait=): it answers when
// the call is decided, or when the wait passes.
type longPoll struct {
	status string
	took   time.Duration
	err    error
}

func (w *toldWorld) longPoll(t *testing.T, requestID string, wait time.Duration) <-chan longPoll {
	t.Helper()
	ch := make(chan longPoll, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/calls/%s?wait=%ds", w.api.URL, requestID, int(wait.Seconds())), nil)
		req.Header.Set("Authorization", "Bearer admin")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- longPoll{err: err}
			return
		}
		defer resp.Body.Close()
		var v struct {
			Status string `json:"status"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		ch <- longPoll{status: v.Status, took: time.Since(start), err: err}
	}()
	// The wait has subscribed (it re-reads the call after subscribing):
	// from here on only an event ends it before its time.
	eventually(t, "the long-poll subscribed", func() bool { return w.k.Subscribers(kernel.PoolWait) == 1 })
	return ch
}

// A denial whose commit is durable but whose answer was lost: the request
// is denied (the call denied, its receipt signed), and channels, live views
// and an agent awaiting the call must hear it as they would have had the
// answer arrived, once. Before, nobody told them: the Slack message kept
// its buttons, the live views showed a pending request, and `chio await`
// waited out its whole wait.
func TestDenialWhoseAnswerWasLostIsTold(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := newToldWorld(t, p, "esc")
	out := w.park(t, "delete_file", `{"path":"/tmp/x"}`)
	live := watch(t, w.k)
	const wait = 15 * time.Second
	awaited := w.longPoll(t, out.RequestID, wait)

	w.st.lose.Store(true)
	tok := testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, a, approval.DecisionDenied,
		func(tok *approval.Token) { tok.Note = "not today" })
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("a denial whose commit answer was lost: want ErrVoteUncertain, got %v", err)
	}
	if w.st.lose.Load() {
		t.Fatal("the denial was never committed")
	}
	if rec, err := w.k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusDenied {
		t.Fatalf("the denial is durable: want the call denied, got %+v %v", rec, err)
	}

	got := <-awaited
	if got.err != nil || got.status != kernel.StatusDenied || got.took >= wait-2*time.Second {
		t.Errorf("chio await: answered %q (%v) after %v; want denied well before its %v wait ends", got.status, got.err, got.took, wait.Round(time.Second))
	}
	resolved := "approval.resolved " + out.ApprovalRequestID + " denied"
	eventually(t, "the channels told the request was denied", func() bool { return w.told.count(resolved) > 0 })
	eventually(t, "the live views told", func() bool {
		return live.count(kernel.EventApprovalResolved, out.ApprovalRequestID, nil) > 0 &&
			live.count(kernel.EventCallCompleted, out.ApprovalRequestID, nil) > 0
	})
	// The token presented again is refused as a replay, and tells nothing
	// again; nor do later sweeps.
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("the durable denial presented again: want ErrReplay, got %v", err)
	}
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if n := w.told.count(resolved); n != 1 {
		t.Fatalf("the channels were told of the denial %d times; want once", n)
	}
	if n, m := live.count(kernel.EventApprovalResolved, out.ApprovalRequestID, nil), live.count(kernel.EventCallCompleted, out.ApprovalRequestID, nil); n != 1 || m != 1 {
		t.Fatalf("the live views got %d resolutions and %d completions; want one each", n, m)
	}
}

// The same lost denial learnt from the vote presented again: the replay's
// answer comes after the channels were told (whichever of the replay and
// the sweep learnt it first), never twice.
func TestDenialWhoseAnswerWasLostIsToldByItsReplay(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := newToldWorld(t, p, "esc")
	out := w.park(t, "delete_file", `{"path":"/tmp/x"}`)
	w.st.lose.Store(true)
	tok := testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, a, approval.DecisionDenied,
		func(tok *approval.Token) { tok.Note = "not today" })
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("want ErrVoteUncertain, got %v", err)
	}
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, approval.ErrReplay) {
		t.Fatalf("the durable denial presented again: want ErrReplay, got %v", err)
	}
	resolved := "approval.resolved " + out.ApprovalRequestID + " denied"
	if n := w.told.count(resolved); n != 1 {
		t.Fatalf("when the replay answered, the channels had been told of the denial %d times; want once", n)
	}
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if n := w.told.count(resolved); n != 1 {
		t.Fatalf("the channels were told of the denial %d times; want once", n)
	}
}

// A vote below the quorum whose answer was lost: it is counted, and live
// views must see the progress once, as after any counted vote.
func TestPartialVoteWhoseAnswerWasLostReachesLiveViews(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	lines := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"A\"\n"+
		"[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"B\"\n", a.Public(), b.Public())
	p, err := policy.Parse([]byte(fmt.Sprintf(quorumTwoPolicy, lines)), "q.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := newToldWorld(t, p, "deploys")
	out := w.park(t, "echo", `{"deploy":"prod"}`)
	live := watch(t, w.k)
	w.st.lose.Store(true)
	tok := testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, a, approval.DecisionApproved, nil)
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("a counted vote whose commit answer was lost: want ErrVoteUncertain, got %v", err)
	}
	if req, err := w.k.Approval(out.ApprovalRequestID); err != nil || len(req.Votes) != 1 || req.Status != approval.StatusPending {
		t.Fatalf("the vote is durable: want one vote on a pending request, got %+v %v", req, err)
	}
	oneVote := func(e kernel.Event) bool {
		return e.Approval.Status == approval.StatusPending && len(e.Approval.Votes) == 1
	}
	eventually(t, "the live views shown the counted vote", func() bool {
		return live.count(kernel.EventApprovalRequested, out.ApprovalRequestID, oneVote) > 0
	})
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if n := live.count(kernel.EventApprovalRequested, out.ApprovalRequestID, oneVote); n != 1 {
		t.Fatalf("the live views got the counted vote %d times; want once", n)
	}
	// Progress re-notifies no channel; the second approval resolves it.
	if n := w.told.count("approval.requested " + out.ApprovalRequestID + " pending"); n != 1 {
		t.Fatalf("channels told of the request %d times; want once (at parking)", n)
	}
	tok = testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, b, approval.DecisionApproved, nil)
	if res, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); err != nil || res.Outcome != approval.StatusApproved {
		t.Fatalf("the second approval: %+v %v", res, err)
	}
}

// A denial that never reached the database tells nobody anything: the
// request stays pending, and the same token presented again denies it,
// told once.
func TestDenialThatNeverCommittedTellsNothing(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := newToldWorld(t, p, "esc")
	out := w.park(t, "delete_file", `{"path":"/tmp/x"}`)
	live := watch(t, w.k)
	w.st.fail.Store(true)
	tok := testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, a, approval.DecisionDenied,
		func(tok *approval.Token) { tok.Note = "not today" })
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("a denial whose commit failed: want ErrVoteUncertain, got %v", err)
	}
	if w.st.fail.Load() {
		t.Fatal("the denial did not reach its commit")
	}
	time.Sleep(2*kernel.SweepInterval + 500*time.Millisecond) // two sweeps look
	if rec, err := w.k.Call(out.RequestID); err != nil || rec.Status != kernel.StatusPendingApproval {
		t.Fatalf("a denial that never committed: want the call pending approval, got %+v %v", rec, err)
	}
	resolved := "approval.resolved " + out.ApprovalRequestID + " denied"
	if n, m := w.told.count(resolved), live.count(kernel.EventApprovalResolved, out.ApprovalRequestID, nil); n != 0 || m != 0 {
		t.Fatalf("a denial that never committed was told to %d channels and %d live views", n, m)
	}
	if res, err := w.k.Respond(context.Background(), out.ApprovalRequestID, tok, "", "test"); err != nil || res.Outcome != approval.StatusDenied {
		t.Fatalf("the same token presented again: %+v %v", res, err)
	}
	if n := w.told.count(resolved); n != 1 {
		t.Fatalf("the channels were told of the denial %d times; want once", n)
	}
}

// After "your vote may or may not be recorded", the approver votes again
// as docs/approver.md tells them to: a second click or `chio approval
// deny` signs a fresh token. When the lost vote was recorded and decided
// the request, that answer must say the vote is recorded (409
// replay_detected: "this approver already decided this request"), never
// the 409 conflict "the request was already resolved" that means the vote
// came too late and was not recorded (Slack: "resolved before your vote
// arrived").
func TestVotingAgainAfterALostDenialSaysTheVoteIsRecorded(t *testing.T) {
	a, b := keys.FromSeed([]byte("approver-a-approver-a-approver-a")), keys.FromSeed([]byte("approver-b-approver-b-approver-b"))
	p, err := policy.Parse([]byte(fmt.Sprintf(replicaPolicy, a.Public(), b.Public())), "replicas.toml")
	if err != nil {
		t.Fatal(err)
	}
	w := newToldWorld(t, p, "esc")
	out := w.park(t, "delete_file", `{"path":"/tmp/x"}`)
	deny := func() []byte {
		return testkit.SignToken(t, w.k, w.clk.Now(), out.ApprovalRequestID, a, approval.DecisionDenied,
			func(tok *approval.Token) { tok.Note = "not today" })
	}
	w.st.lose.Store(true)
	if _, err := w.k.Respond(context.Background(), out.ApprovalRequestID, deny(), "", "test"); !errors.Is(err, kernel.ErrVoteUncertain) {
		t.Fatalf("want ErrVoteUncertain, got %v", err)
	}
	body := append(append([]byte(`{"token":`), deny()...), '}')
	resp, err := http.Post(w.api.URL+"/approvals/"+out.ApprovalRequestID+"/respond", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ae struct{ Error, Message string }
	if err := json.NewDecoder(resp.Body).Decode(&ae); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusConflict || ae.Error != httpapi.CodeReplayDetected {
		t.Fatalf("the approver's vote again after its recorded denial: got %d %s %q; want 409 %s (the vote is recorded)",
			resp.StatusCode, ae.Error, ae.Message, httpapi.CodeReplayDetected)
	}
	t.Logf("answered %d %s: %s", resp.StatusCode, ae.Error, ae.Message)
}
