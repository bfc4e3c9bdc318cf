package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// The memory of sessions ended by a sign-out everywhere is bounded: an
// entry goes when its session would have expired, and one approver's
// repeated sign-outs forget only their own oldest entries, never another
// approver's.
func TestSignedOutSessionsAreBounded(t *testing.T) {
	ss := newSessions()
	now := time.Unix(1_800_000_000, 0)
	ss.out.remember("bob", "bob-1", now.Add(time.Hour), now)
	for i := range MaxSignedOutPerApprover + 10 {
		ss.out.remember("alice", fmt.Sprint("alice-", i), now.Add(time.Hour), now)
	}
	if got := len(ss.out.byApprover["alice"]); got != MaxSignedOutPerApprover {
		t.Errorf("alice has %d remembered, want the cap %d", got, MaxSignedOutPerApprover)
	}
	if ss.signedOutEverywhere("alice-0", now) || !ss.signedOutEverywhere(fmt.Sprint("alice-", MaxSignedOutPerApprover+9), now) {
		t.Error("at the cap, the oldest is not the one forgotten")
	}
	if !ss.signedOutEverywhere("bob-1", now) {
		t.Error("alice's sign-outs made chiod forget bob's")
	}
	later := now.Add(time.Hour)
	if ss.signedOutEverywhere("bob-1", later) {
		t.Error("remembered past the session's own expiry")
	}
	if _, ok := ss.out.ids["bob-1"]; ok || len(ss.out.byApprover["bob"]) != 0 {
		t.Error("an expired entry stays in memory")
	}
	ss.out.remember("carol", "carol-1", later.Add(time.Hour), later)
	if n := len(ss.out.byApprover["alice"]); n != MaxSignedOutPerApprover {
		t.Fatalf("alice: %d", n)
	}
	ss.out.remember("alice", "alice-new", later.Add(time.Hour), later)
	if n := len(ss.out.byApprover["alice"]); n != 1 {
		t.Errorf("alice's expired entries were not pruned on her next sign-out: %d remembered", n)
	}
}
