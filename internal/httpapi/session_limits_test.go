package httpapi

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// checkSessionIndex fails unless live and byApprover list the same ids.
func checkSessionIndex(t *testing.T, ss *sessions) {
	t.Helper()
	listed := 0
	for approver, ids := range ss.byApprover {
		if len(ids) == 0 || len(ids) > MaxSessionsPerApprover {
			t.Fatalf("%s lists %d sessions", approver, len(ids))
		}
		for _, id := range ids {
			if s, ok := ss.live[id]; !ok || s.approver != approver {
				t.Fatalf("%s lists %s, which is not its live session", approver, id)
			}
		}
		listed += len(ids)
	}
	if listed != len(ss.live) {
		t.Fatalf("%d sessions listed, %d live", listed, len(ss.live))
	}
}

// One approver signing in MaxSessions times (a session costs only a
// signature) must not lock every other approver out for SessionTTL.
func TestOneApproverCannotTakeEverySessionSlot(t *testing.T) {
	ss := newSessions()
	now := time.Unix(1_800_000_000, 0)
	for i := 0; i < MaxSessions; i++ {
		if _, _, err := ss.start("alice", now, ""); err != nil {
			t.Fatalf("alice's sign-in %d refused: %v", i, err)
		}
	}
	if _, _, err := ss.start("bob", now, ""); err != nil {
		t.Fatalf("bob refused after alice signed in %d times: %v", MaxSessions, err)
	}
	if n := len(ss.live); n != MaxSessionsPerApprover+1 {
		t.Fatalf("%d live sessions, want alice's %d and bob's", n, MaxSessionsPerApprover)
	}
	checkSessionIndex(t, ss)
}

// At their cap, an approver signing in again ends their own oldest session,
// never a newer one and never anyone else's.
func TestApproverAtCapLosesOldestSession(t *testing.T) {
	ss := newSessions()
	now := time.Unix(1_800_000_000, 0)
	bob, _, _ := ss.start("bob", now, "")
	var ids []string
	for i := 0; i < MaxSessionsPerApprover+2; i++ {
		id, _, err := ss.start("alice", now.Add(time.Duration(i)*time.Second), "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i, id := range ids {
		_, ok := ss.get(id, now)
		if want := i >= 2; ok != want {
			t.Fatalf("alice's session %d live = %v, want %v", i, ok, want)
		}
	}
	if _, ok := ss.get(bob, now); !ok {
		t.Fatal("bob's session was evicted by alice's sign-ins")
	}
	checkSessionIndex(t, ss)
	// Ending, expiring and evicting all unlist; nothing stays behind.
	ss.end(ids[5])
	checkSessionIndex(t, ss)
	if _, ok := ss.get(bob, now.Add(SessionTTL)); ok {
		t.Fatal("expired session admitted")
	}
	for _, id := range ids {
		ss.end(id)
	}
	checkSessionIndex(t, ss)
	if len(ss.live) != 0 || len(ss.byApprover) != 0 {
		t.Fatalf("left behind: %d live, %d approvers", len(ss.live), len(ss.byApprover))
	}
}

// The global cap still holds against many approvers, and lifts as their
// sessions expire; an approver at their own cap still gets in (their oldest
// session makes room).
func TestSessionsGlobalCapIsABackstop(t *testing.T) {
	ss := newSessions()
	now := time.Unix(1_800_000_000, 0)
	for i := 0; i < MaxSessions; i++ {
		if _, _, err := ss.start(fmt.Sprintf("approver-%d", i/MaxSessionsPerApprover), now, ""); err != nil {
			t.Fatalf("sign-in %d: %v", i, err)
		}
	}
	_, _, err := ss.start("newcomer", now, "")
	if e, ok := err.(*APIError); !ok || e.Status != http.StatusServiceUnavailable {
		t.Fatalf("past the global cap: %v", err)
	}
	if _, _, err := ss.start("approver-0", now, ""); err != nil {
		t.Fatalf("an approver at their cap, with every slot taken: %v", err)
	}
	if _, _, err := ss.start("newcomer", now.Add(SessionTTL), ""); err != nil {
		t.Fatalf("after every session expired: %v", err)
	}
	if len(ss.live) != 1 {
		t.Fatalf("%d live after the expired were swept", len(ss.live))
	}
	checkSessionIndex(t, ss)
}
