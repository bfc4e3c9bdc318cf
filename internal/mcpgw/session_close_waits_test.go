package mcpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/kernel"
)

// An agent parks a call over /mcp asking for a long wait, drops the POST
// (a flaky network, a client that gives up) and ends the session with
// DELETE. The SDK's session close waits for the session's requests in
// flight, and the parked call's wait went on for the whole wait asked
// (up to MaxWait): the DELETE hung, and the closed session kept its
// goroutine, a subscriber of the kernel's wait pool (shared by every
// agent), the agent's wait slot and its session place. Closing a session
// ends its waits: the call stays parked, chio_await or `chio await`
// fetches its outcome later.
func TestDeletedSessionEndsItsWaits(t *testing.T) {
	approver, _ := keys.Generate(nil)
	w := newPolicyToolsWorld(t, fmt.Sprintf(alwaysApprovedRefunds, approver.Public()), []string{"refunds"})
	bearer, err := SignSession(w.Agent, w.CapRaw, w.Kernel.PublicKey().String(), time.Now(), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	send := func(ctx context.Context, method, sid, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, method, w.URL+Path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bearer)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if sid != "" {
			req.Header.Set(sessionIDHeader, sid)
		}
		return client.Do(req)
	}
	sid := openMCPSession(t, w.URL, bearer)
	if resp, err := send(context.Background(), http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	base := w.Kernel.Subscribers(kernel.PoolWait)
	// Should a wait outlive the session, the server's own cleanup would
	// wait for it: the parked calls are cancelled first, which ends them.
	var parked []string
	t.Cleanup(func() {
		for _, rid := range parked {
			if rec, err := w.Kernel.Call(rid); err == nil && rec.ApprovalID != "" {
				_, _ = w.Kernel.Cancel(context.Background(), rec.ApprovalID, "test over", kernel.CancelledByAdmin)
			}
		}
	})

	// A signed refund that parks, held open for up to 600 s.
	const waits = 3
	for i := range waits {
		args := json.RawMessage(`{"amount":5,"currency":"USD","customer_id":"c"}`)
		hash, err := kernel.ParameterHash("demo", "issue_refund", args, nil)
		if err != nil {
			t.Fatal(err)
		}
		rid := kernel.NewID("mcp-")
		parked = append(parked, rid)
		p, err := kernel.SignProof(w.Agent, rid, w.Cap.ID, "demo", "issue_refund", hash, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		proof, _ := json.Marshal(CallProof{RequestID: rid, IssuedAt: p.IssuedAt, Signature: p.Signature})
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"demo__issue_refund",`+
			`"arguments":%s,"_meta":{%q:600,%q:%s}}}`, i+2, args, MetaWait, MetaProof, proof)
		ctx, drop := context.WithCancel(context.Background())
		go func() {
			if resp, err := send(ctx, http.MethodPost, sid, body); err == nil {
				resp.Body.Close()
			}
		}()
		settle(t, "the parked call's wait to start", func() bool { return w.Kernel.Subscribers(kernel.PoolWait) == base+i+1 })
		drop() // the client goes away; the session stays
	}

	deleted := make(chan int, 1)
	go func() {
		resp, err := send(context.Background(), http.MethodDelete, sid, "")
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	var status int
	ended := func() bool {
		select {
		case status = <-deleted:
		default:
		}
		return status != 0 && w.Kernel.Subscribers(kernel.PoolWait) == base && agentWaits(w.gw) == 0 && liveSessions(w.gw) == 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !ended() {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the session's DELETE: DELETE answered %v (0: still hanging), %d of %d waits still subscribed "+
				"to the kernel, %d agent wait slots held, %d live MCP sessions: a closed session's waits run on for the "+
				"600 s they asked", status, w.Kernel.Subscribers(kernel.PoolWait)-base, waits, agentWaits(w.gw), liveSessions(w.gw))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status != http.StatusNoContent {
		t.Fatalf("DELETE: %d", status)
	}
}

// agentWaits is how many waits all agents hold on g.
func agentWaits(g *Gateway) int {
	g.waits.mu.Lock()
	defer g.waits.mu.Unlock()
	n := 0
	for _, v := range g.waits.n {
		n += v
	}
	return n
}

// settle polls cond until it holds, failing the test after a deadline far
// shorter than the waits asked for (600 s) and far longer than the work.
func settle(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
