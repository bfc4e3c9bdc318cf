package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/httpapi"
	"github.com/chiokernel/chio/policy"
)

// openSessionStream opens GET /approvals/stream with c's session cookie;
// it returns the parsed events.
func openSessionStream(t *testing.T, f *approvalsFixture, c *sessionClient) (<-chan streamEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/approvals/stream", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	ev := readStream(t, resp.Body)
	return ev, func() { cancel(); resp.Body.Close() }
}

// streamSeesApproval reports whether the stream delivers an
// approval.requested event for approvalID within wait.
func streamSeesApproval(events <-chan streamEvent, approvalID string, wait time.Duration) bool {
	deadline := time.After(wait)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return false
			}
			if a, _ := e.data["approval"].(map[string]any); e.typ == "approval.requested" && a["approval_id"] == approvalID {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// streamEnds reports whether the stream ends (the server closes it)
// within wait, whatever events come first.
func streamEnds(events <-chan streamEvent, wait time.Duration) bool {
	deadline := time.After(wait)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// A stream lives no longer than the session that opened it: logging out
// (DELETE /v1/session) ends the streams of that session at once, with no
// event needed, and nothing more reaches them — the cookie is dead for
// every other route too. The same approver's other session keeps its own
// stream.
func TestSessionStreamEndsAtLogout(t *testing.T) {
	f := newApprovalsFixture(t)
	c, other := newSessionClient(t, f), newSessionClient(t, f)
	for _, x := range []*sessionClient{c, other} {
		if code, m, _ := x.login(keyBob, keyBob.Public().String(), x.challenge()); code != 200 {
			t.Fatalf("login: %d %v", code, m)
		}
	}
	events, stop := openSessionStream(t, f, c)
	defer stop()
	kept, stopKept := openSessionStream(t, f, other)
	defer stopKept()
	if code, _, _ := c.do("DELETE", "/v1/session", ""); code != 200 {
		t.Fatal("logout")
	}
	if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
		t.Fatalf("cookie still reads after logout: %d", code)
	}
	if !streamEnds(events, 2*time.Second) {
		t.Fatal("the stream of a logged-out session is still open")
	}
	out := f.pendingRefund(t)
	if streamSeesApproval(events, out.ApprovalRequestID, 100*time.Millisecond) {
		t.Fatalf("a stream opened by a session that has since logged out still received new request %s", out.ApprovalRequestID)
	}
	if !streamSeesApproval(kept, out.ApprovalRequestID, 2*time.Second) {
		t.Fatal("logging out one session ended the stream of the approver's other session")
	}
}

// Same at the session's expiry (SessionTTL on the injected clock): the
// stream ends when the clock reaches it, with no event needed.
func TestSessionStreamEndsAtSessionExpiry(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	if code, m, _ := c.login(keyBob, keyBob.Public().String(), c.challenge()); code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	events, stop := openSessionStream(t, f, c)
	defer stop()
	f.clock.Advance(httpapi.SessionTTL + time.Minute)
	if !streamEnds(events, 2*time.Second) {
		t.Fatal("the stream of an expired session is still open")
	}
	if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
		t.Fatalf("expired session still reads: %d", code)
	}
	// The fixture's capability lived an hour; give the agent a fresh one.
	raw, _, err := f.k.IssueCapability(keyAgent.Public(), []string{"refunds"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	f.caps[keyAgent.Public().String()] = raw
	out := f.pendingRefund(t)
	if streamSeesApproval(events, out.ApprovalRequestID, 2*time.Second) {
		t.Fatalf("a stream whose session expired %s ago still received new request %s", time.Minute, out.ApprovalRequestID)
	}
}

// And after the approver is removed from the policy in force (the check
// SessionApprover makes on every other request): the stream re-checks
// before every event and keepalive, and ends instead of sending.
func TestSessionStreamEndsWhenApproverRemoved(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	if code, m, _ := c.login(keyBob, keyBob.Public().String(), c.challenge()); code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	events, stop := openSessionStream(t, f, c)
	defer stop()
	// The same policy with Bob removed from every grant.
	src := fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public())
	src = strings.ReplaceAll(src, "[[grants.approval.approvers]]\npublic_key = \""+keyBob.Public().String()+"\"\ndisplay_name = \"Bob\"\n", "")
	src = strings.ReplaceAll(src, "quorum = 2", "quorum = 1")
	if strings.Contains(src, keyBob.Public().String()) {
		t.Fatal("Bob still in the policy")
	}
	p, err := policy.Parse([]byte(src), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	if code, _, _ := c.do("GET", "/approvals/pending", ""); code != 401 {
		t.Fatalf("removed approver's cookie still reads: %d", code)
	}
	out := f.pendingRefund(t)
	if streamSeesApproval(events, out.ApprovalRequestID, 2*time.Second) {
		t.Fatalf("an approver removed from the policy still receives new requests (%s) on a stream opened before", out.ApprovalRequestID)
	}
	if !streamEnds(events, 2*time.Second) {
		t.Fatal("the stream of a removed approver is still open")
	}
}
