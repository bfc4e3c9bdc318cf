package httpapi_test

// The long-poll's bounds: a wait (GET /v1/calls/{id}?wait=) counts against
// the credential that holds it — the agent's own Chio-Proof, or a bearer
// token — so no one credential, leaked or buggy, can starve the others.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// heldWaits opens long-polls against the fixture's server one at a time
// and holds them open until the test ends.
type heldWaits struct {
	t      *testing.T
	f      *approvalsFixture
	client *http.Client
	ctx    context.Context
	wg     sync.WaitGroup
}

// waitAnswer is a long-poll answered at once instead of held.
type waitAnswer struct {
	status     int
	retryAfter string
	body       map[string]any
}

func newHeldWaits(t *testing.T, f *approvalsFixture) *heldWaits {
	ctx, cancel := context.WithCancel(context.Background())
	h := &heldWaits{t: t, f: f, client: &http.Client{Transport: &http.Transport{}}, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		h.wg.Wait()
		h.client.CloseIdleConnections()
	})
	return h
}

// open starts a long-poll on call id with hdr. It returns held once the
// wait has taken a waiter slot (the kernel counts one more subscriber),
// or the answer the server gave instead.
func (h *heldWaits) open(id string, hdr map[string]string) (held bool, a waitAnswer) {
	h.t.Helper()
	before := h.f.k.Subscribers(kernel.PoolWait)
	req, _ := http.NewRequestWithContext(h.ctx, "GET", h.f.srv.URL+"/v1/calls/"+id+"?wait=60s", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	answered := make(chan waitAnswer, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		resp, err := h.client.Do(req)
		if err != nil {
			return // the test ended the wait
		}
		defer resp.Body.Close()
		a := waitAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After")}
		_ = json.NewDecoder(resp.Body).Decode(&a.body)
		answered <- a
	}()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case a := <-answered:
			return false, a
		case <-tick.C:
			if h.f.k.Subscribers(kernel.PoolWait) > before {
				return true, waitAnswer{}
			}
		case <-deadline:
			h.t.Fatalf("a long-poll on %s neither waited nor was answered", id)
		}
	}
}

// agentProof is the header by which the parked call's agent reads it.
func (f *approvalsFixture) agentProof(k keys.PrivateKey, id string) map[string]string {
	return map[string]string{httpapi.StatusProofHeader: httpapi.SignStatusProof(k, id, f.clock.Now())}
}

// TestTokenWaitsLeaveTheAgentItsOwn: waits held through the reader token
// on an agent's call are the token's, not the agent's: with as many of
// them as an agent may hold, the agent still awaits its own call.
func TestTokenWaitsLeaveTheAgentItsOwn(t *testing.T) {
	f := newApprovalsFixture(t)
	out := f.pendingRefund(t)
	h := newHeldWaits(t, f)
	for i := 0; i < httpapi.MaxWaitsPerAgent; i++ {
		if held, a := h.open(out.RequestID, withBearer(approvalsReader)); !held {
			t.Fatalf("the reader token's wait %d: %d %v", i+1, a.status, a.body)
		}
	}
	if held, a := h.open(out.RequestID, f.agentProof(keyAgent, out.RequestID)); !held {
		t.Fatalf("the agent's own wait, beside %d reader-token waits on its call: %d %v", httpapi.MaxWaitsPerAgent, a.status, a.body)
	}
}

// TestWaitsPerToken: one bearer token holds at most MaxWaitsPerToken
// waits, over every agent's calls; the next is refused with 429 and
// Retry-After, and the waiter pool keeps room for the agents.
//
// The pool is 4,096 waits. Held over real connections, that many would
// pass the race detector's goroutine limit, so all but the slots this test
// needs are taken by subscriptions standing in for other clients' waits:
// what is tested is that the token stops at its share of what is free.
func TestWaitsPerToken(t *testing.T) {
	f := newApprovalsFixture(t)
	// Parked calls of enough agents that their own caps would not stop the
	// token before its share.
	ids := make([]string, httpapi.MaxWaitsPerToken/httpapi.MaxWaitsPerAgent+1)
	for i := range ids {
		k := keys.FromSeed([]byte(fmt.Sprintf("waiting-agent-%018d", i)))
		capRaw, _, err := f.k.IssueCapability(k.Public(), []string{"refunds"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		out := f.w.SubmitCall(t, f.w.CallAs(t, k, capRaw, "pay", "refund", `{"amount":450,"currency":"USD"}`,
			`{"purpose":"refund","max_amount":{"units":450,"currency":"USD"}}`))
		if out.Status != kernel.StatusPendingApproval {
			t.Fatalf("want pending, got %+v", out)
		}
		ids[i] = out.RequestID
	}
	own := f.pendingRefund(t)

	// Free: the reader token's share, one wait of the admin token, one of
	// the agent.
	free := httpapi.MaxWaitsPerToken + 2
	for f.k.Subscribers(kernel.PoolWait) < kernel.MaxWaitSubscribers-free {
		_, cancel, ok := f.k.Subscribe(kernel.PoolWait)
		if !ok {
			t.Fatal("the waiter pool filled early")
		}
		defer cancel()
	}

	h := newHeldWaits(t, f)
	held := 0
	var refusal waitAnswer
	for held < free {
		ok, a := h.open(ids[held%len(ids)], withBearer(approvalsReader))
		if !ok {
			refusal = a
			break
		}
		held++
	}
	if ok, a := h.open(own.RequestID, f.agentProof(keyAgent, own.RequestID)); !ok {
		t.Errorf("the agent's own wait, after the reader token's %d: %d %v", held, a.status, a.body)
	}
	if held != httpapi.MaxWaitsPerToken || refusal.status != http.StatusTooManyRequests ||
		refusal.body["error"] != "unavailable" || refusal.retryAfter == "" {
		t.Errorf("the reader token held %d waits (its share is %d); the next was answered %d %v, Retry-After %q",
			held, httpapi.MaxWaitsPerToken, refusal.status, refusal.body, refusal.retryAfter)
	}
	if ok, a := h.open(ids[0], withBearer(approvalsAdmin)); !ok {
		t.Errorf("the admin token's wait beside the reader token's: %d %v", a.status, a.body)
	}
}
