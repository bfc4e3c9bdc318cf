package kernel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/clock"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/kernel"
)

// signalFullStore answers its nth Update with ErrQueueFull and then closes
// answered.
type signalFullStore struct {
	fullStore
	answered chan struct{}
}

func (s *signalFullStore) Update(ctx context.Context, fn func(kernel.Tx) error) error {
	err := s.fullStore.Update(ctx, fn)
	if err == kernel.ErrQueueFull {
		close(s.answered)
	}
	return err
}

// An approved call's allow commit waits out a full commit queue (its
// vote is durable: backpressure.go). It waited holding policyMu (read),
// so a reload (SetPolicy) waited for the queue to drain, and every new
// call's allow commit waited behind that reload (a waiting writer stops
// new readers): one backed-up commit froze reloads and all new calls,
// where a new call is otherwise answered at once (ErrQueueFull).
func TestReloadDoesNotWaitOutAResumesFullQueue(t *testing.T) {
	tool := &scriptedTool{}
	fs := &signalFullStore{answered: make(chan struct{})}
	fake := clock.NewFake(time.Unix(1_900_000_000, 0))
	w := testkit.NewWorld(t, testkit.Options{PolicyTOML: fmt.Sprintf(writeAheadPolicy, financeLead.Public()), Dispatcher: tool,
		Server: "pay", Grants: []string{"echo", "refunds", "asked"}, Clock: fake,
		WrapStore: func(s kernel.Store) kernel.Store { fs.Store = s; return fs }})
	ctx := context.Background()
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.Status != kernel.StatusPendingApproval {
		t.Fatalf("park: %+v", out)
	}
	tok := w.Token(t, out.ApprovalRequestID, financeLead, approval.DecisionApproved, nil)
	fs.full.Store(fs.n.Load() + 2) // the vote commits; resume's allow commit meets a full queue
	responded := make(chan error, 1)
	go func() {
		_, err := w.Kernel.Respond(ctx, out.ApprovalRequestID, tok, "", "")
		responded <- err
	}()
	<-fs.answered       // the resume now waits out the full queue (its backoff runs on the fake clock)
	release := func() { // lets the resume's backoff end, whatever the test found
		for {
			fake.Advance(time.Second)
			select {
			case err := <-responded:
				if err != nil {
					t.Errorf("Respond: %v", err)
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	reloaded := make(chan struct{})
	go func() { w.Kernel.SetPolicy(w.Kernel.Policy()); close(reloaded) }()
	select {
	case <-reloaded:
	case <-time.After(5 * time.Second):
		release()
		<-reloaded
		t.Fatal("a reload waited for an approved call's commit to get through a full queue")
	}
	submitted := make(chan *kernel.Outcome, 1)
	go func() { submitted <- w.Submit(t, "echo", `{"x":1}`, "") }()
	select {
	case o := <-submitted:
		if o.Status != kernel.StatusAllowed {
			t.Errorf("a new call during the wait: %+v", o)
		}
	case <-time.After(5 * time.Second):
		release()
		t.Fatal("a new call waited for an approved call's commit to get through a full queue")
	}
	release()
	if rec, _ := w.Kernel.Call(out.RequestID); rec.Status != kernel.StatusAllowed || len(tool.deliveries(out.RequestID)) != 1 {
		t.Fatalf("the approved call after the wait: stored %s, delivered %d", rec.Status, len(tool.deliveries(out.RequestID)))
	}
}
