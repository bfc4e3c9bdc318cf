package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// A session whose key has left the policy in force is over, not paused:
// putting the key back (a reload of an older policy file, an operator
// undoing a removal) must not bring back the sessions signed in before
// the removal — whoever holds a copy of such a cookie would read again.
// The approver signs in again.
func TestRemovedApproverSessionDoesNotReviveOnReAdd(t *testing.T) {
	f := newApprovalsFixture(t)
	c := newSessionClient(t, f)
	if code, m, _ := c.login(keyBob, keyBob.Public().String(), c.challenge()); code != 200 {
		t.Fatalf("login: %d %v", code, m)
	}
	withBob := f.k.Policy()
	src := fmt.Sprintf(approvalsPolicy, keyAlice.Public(), keyBob.Public())
	src = strings.ReplaceAll(src, "[[grants.approval.approvers]]\npublic_key = \""+keyBob.Public().String()+"\"\ndisplay_name = \"Bob\"\n", "")
	src = strings.ReplaceAll(src, "quorum = 2", "quorum = 1")
	if strings.Contains(src, keyBob.Public().String()) {
		t.Fatal("Bob still in the policy")
	}
	without, err := policy.Parse([]byte(src), "removed.toml")
	if err != nil {
		t.Fatal(err)
	}
	f.k.SetPolicy(without)
	if code, _, _ := c.do("GET", "/v1/session", ""); code != 401 {
		t.Fatalf("removed approver's session: %d", code)
	}
	f.k.SetPolicy(withBob)
	if code, m, _ := c.do("GET", "/v1/session", ""); code != 401 {
		t.Fatalf("a session refused while its key was out of the policy answers %d %v once the key is back, want 401: it must have ended", code, m)
	}
	if code, m, _ := c.login(keyBob, keyBob.Public().String(), c.challenge()); code != 200 {
		t.Fatalf("signing in again once back: %d %v", code, m)
	}
}
