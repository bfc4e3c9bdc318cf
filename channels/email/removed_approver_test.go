package email

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/policy"
)

const twoApproversPolicy = `
[[servers]]
id = "pay"
transport = "builtin"
[[servers.tools]]
name = "delete_file"

[[grants]]
id = "deploys"
server = "pay"
tool = "delete_file"
[grants.constraints]
require_approval_always = true
[grants.approval]
%s
`

func approverTOML(key keys.PublicKey, name string) string {
	return fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = %q\ncontact = { email = \"%s@example.com\" }\n",
		key.String(), name, strings.ToLower(name))
}

// trustedBy sets c's policy to one whose grant "deploys" lists a fresh
// approver, makes req a request of that grant trusting them, and returns
// their key: a link page shows a request only to one of its approvers.
func trustedBy(t *testing.T, c *Channel, req *approval.Request) string {
	t.Helper()
	k, _ := keys.Generate(nil)
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(k.Public(), "Lead"))), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	c.o.Policy = func() *policy.Policy { return p }
	req.PolicyID, req.TrustedApprovers = "deploys", []string{k.Public().String()}
	return k.Public().String()
}

// A policy reload that removes an approver ends what their email link
// lets them do: the kernel refuses their vote, and the link no longer
// shows the request either, as an approver session no longer reads once
// its key left the policy in force. The link used to keep showing the
// request (its arguments when exposed, the votes) until its deadline.
func TestLinkOfARemovedApproverIsRefused(t *testing.T) {
	lead, _ := keys.Generate(nil)
	cfo, _ := keys.Generate(nil)
	w := testkit.NewWorld(t, testkit.Options{
		PolicyTOML: fmt.Sprintf(twoApproversPolicy, approverTOML(lead.Public(), "Lead")+approverTOML(cfo.Public(), "CFO")),
		Server:     "pay", Grants: []string{"deploys"}})
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	id := out.ApprovalRequestID
	now := time.Now()
	c := testChannel(t, &now)
	c.o.Policy = w.Kernel.Policy
	srv := httptest.NewServer(c.Handler(w.Kernel))
	defer srv.Close()
	leadURL := srv.URL + LinkPath + c.Link(id, lead.Public().String(), now.Add(time.Hour))
	cfoURL := srv.URL + LinkPath + c.Link(id, cfo.Public().String(), now.Add(time.Hour))
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(leadURL); code != http.StatusOK {
		t.Fatalf("the lead's link before the reload: %d %s", code, body)
	}

	// The operator removes the lead from the grant.
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, approverTOML(cfo.Public(), "CFO"))), "reloaded.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}

	if code, body := get(leadURL); code != http.StatusForbidden || !strings.Contains(body, "approval_rejected") ||
		strings.Contains(body, "delete_file") {
		t.Fatalf("the removed lead's link after the reload answered %d %s, want 403 approval_rejected showing nothing", code, body)
	}
	tok := w.Token(t, id, lead, approval.DecisionApproved, nil)
	res, err := http.Post(leadURL, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("the removed lead's vote through the link: %d", res.StatusCode)
	}
	if req, err := w.Kernel.Approval(id); err != nil || req.Status != approval.StatusPending || len(req.Votes) != 0 {
		t.Fatalf("after the removed lead's attempts: %+v %v", req, err)
	}
	// The approver who stays still reads and decides through their link.
	if code, body := get(cfoURL); code != http.StatusOK {
		t.Fatalf("the CFO's link after the reload: %d %s", code, body)
	}
	tok = w.Token(t, id, cfo, approval.DecisionDenied, func(tk *approval.Token) { tk.Note = "no" })
	res, err = http.Post(cfoURL, "application/json", strings.NewReader(`{"token":`+string(tok)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the CFO's vote through the link: %d", res.StatusCode)
	}
}
