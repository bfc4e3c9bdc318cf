package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/policy"
)

// policyWithoutBob is the fixture's policy with Bob removed from every
// grant.
func policyWithoutBob(t *testing.T) *policy.Policy {
	t.Helper()
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
	return p
}

// PolicyReloaded (chiod calls it after each reload) ends the sessions of
// a removed approver that nobody presents meanwhile, and their streams, at
// once: putting the key back later revives neither. Another approver's
// session is not touched.
func TestPolicyReloadedEndsRemovedApproversSessions(t *testing.T) {
	f := newApprovalsFixture(t)
	closed, streaming, alice := newSessionClient(t, f), newSessionClient(t, f), newSessionClient(t, f)
	for _, x := range []*sessionClient{closed, streaming} {
		if code, m, _ := x.login(keyBob, keyBob.Public().String(), x.challenge()); code != 200 {
			t.Fatalf("login: %d %v", code, m)
		}
	}
	if code, m, _ := alice.login(keyAlice, keyAlice.Public().String(), alice.challenge()); code != 200 {
		t.Fatalf("Alice's login: %d %v", code, m)
	}
	events, stop := openSessionStream(t, f, streaming)
	defer stop()
	aliceEvents, stopAlice := openSessionStream(t, f, alice)
	defer stopAlice()

	withBob := f.k.Policy()
	f.k.SetPolicy(policyWithoutBob(t))
	f.api.PolicyReloaded()
	if !streamEnds(events, 2*time.Second) {
		t.Fatal("the stream of an approver a reload removed is still open")
	}
	f.k.SetPolicy(withBob)
	f.api.PolicyReloaded()
	if code, m, _ := closed.do("GET", "/v1/session", ""); code != 401 {
		t.Fatalf("a session of a removed approver, not presented while the key was out, answers %d %v once the key is back, want 401", code, m)
	}
	if code, _, _ := streaming.do("GET", "/approvals/pending", ""); code != 401 {
		t.Fatalf("the removed approver's stream session still reads: %d", code)
	}
	if code, m, _ := alice.do("GET", "/v1/session", ""); code != 200 {
		t.Fatalf("Alice, never removed, lost her session: %d %v", code, m)
	}
	out := f.pendingRefund(t)
	if !streamSeesApproval(aliceEvents, out.ApprovalRequestID, 2*time.Second) {
		t.Fatal("Alice's stream ended with Bob's")
	}
}

// A reload that keeps a key but renames it, or moves it to other grants,
// ends none of its sessions: the approver is still one. The session
// answers with the new display name.
func TestPolicyReloadedKeepsARenamedApprover(t *testing.T) {
	f := newApprovalsFixture(t)
	c, streaming := newSessionClient(t, f), newSessionClient(t, f)
	for _, x := range []*sessionClient{c, streaming} {
		if code, m, _ := x.login(keyBob, keyBob.Public().String(), x.challenge()); code != 200 {
			t.Fatalf("login: %d %v", code, m)
		}
	}
	events, stop := openSessionStream(t, f, streaming)
	defer stop()
	// Bob renamed Robert, and out of the refunds grant: only deploys lists
	// him now.
	src := fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public())
	bob := "[[grants.approval.approvers]]\npublic_key = \"" + keyBob.Public().String() + "\"\ndisplay_name = \"Bob\"\n"
	src = strings.Replace(src, bob, "", 1)
	src = strings.Replace(src, bob, strings.Replace(bob, "Bob", "Robert", 1), 1)
	if strings.Count(src, keyBob.Public().String()) != 1 || !strings.Contains(src, `"Robert"`) {
		t.Fatal("the fixture's policy changed; update this test")
	}
	p, err := policy.Parse([]byte(src), "renamed.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(p)
	f.api.PolicyReloaded()
	code, m, _ := c.do("GET", "/v1/session", "")
	if code != 200 || m["display_name"] != "Robert" {
		t.Fatalf("a renamed approver's session: %d %v, want 200 as Robert", code, m)
	}
	out := f.pendingRefund(t)
	if !streamSeesApproval(events, out.ApprovalRequestID, 2*time.Second) {
		t.Fatal("a reload that kept the approver's key ended their stream")
	}
}
