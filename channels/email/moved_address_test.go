package email

import (
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/internal/testkit"
	"github.com/chiokernel/chio/policy"
)

// mailedLink returns the link of the one message in box whose text greets
// name, read as its recipient reads it (MIME parts, quoted-printable
// decoded).
func mailedLink(t *testing.T, box *sink, name string) string {
	t.Helper()
	box.mu.Lock()
	defer box.mu.Unlock()
	for _, raw := range box.msgs {
		m, err := mail.ReadMessage(strings.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		mr := multipart.NewReader(m.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			if !strings.Contains(string(b), "Hello "+name+",") {
				continue
			}
			if l := regexp.MustCompile(`/email/a/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)`).FindStringSubmatch(string(b)); l != nil {
				return l[1]
			}
		}
	}
	t.Fatalf("no link mailed to %s among %d messages", name, len(box.msgs))
	return ""
}

// An approver whose contact.email the operator changes (the old mailbox
// was shared, handed over, or is no longer theirs) keeps their key, but
// the link mailed to the old address must stop showing the request, as
// a removed approver's does: whoever reads that mailbox now is not who
// the policy in force mails. The link, bound to the key alone, kept
// showing the request (its arguments when exposed, the votes) until its
// deadline. The link mailed to the new address shows it.
func TestLinkMailedToAnAddressTheApproverNoLongerHasIsRefused(t *testing.T) {
	box, addr := startSink(t)
	lead, _ := keys.Generate(nil)
	withAddress := func(email string) string {
		return fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Lead\"\ncontact = { email = %q }\n",
			lead.Public().String(), email)
	}
	w := testkit.NewWorld(t, testkit.Options{
		PolicyTOML: fmt.Sprintf(twoApproversPolicy, withAddress("finance-team@example.com")),
		Server:     "pay", Grants: []string{"deploys"}})
	out := w.Submit(t, "delete_file", `{"path":"/tmp/x"}`, "")
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	id := out.ApprovalRequestID
	now := time.Now()
	c, err := New(&policy.Email{SMTPAddr: addr, From: "chio@example.com"}, Options{PublicURL: "http://127.0.0.1:7420",
		Policy: w.Kernel.Policy, Secret: make([]byte, 32), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	req, err := w.Kernel.Approval(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	oldLink := mailedLink(t, box, "Lead")
	srv := httptest.NewServer(c.Handler(w.Kernel))
	defer srv.Close()
	get := func(link string) (int, string) {
		t.Helper()
		res, err := http.Get(srv.URL + LinkPath + link)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(oldLink); code != http.StatusOK {
		t.Fatalf("the link before the reload: %d %s", code, body)
	}

	// The operator moves the lead to a mailbox of their own.
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, withAddress("lead@example.com"))), "moved.toml")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Kernel.ApplyPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if code, body := get(oldLink); code != http.StatusForbidden || !strings.Contains(body, "approval_rejected") ||
		strings.Contains(body, "delete_file") {
		t.Fatalf("the link mailed to the old address after the reload answered %d %s, want 403 approval_rejected showing nothing", code, body)
	}
	box.mu.Lock()
	box.msgs = nil
	box.mu.Unlock()
	if err := c.Deliver(context.Background(), "approval.requested", req); err != nil {
		t.Fatal(err)
	}
	if code, body := get(mailedLink(t, box, "Lead")); code != http.StatusOK {
		t.Fatalf("the link mailed to the new address: %d %s", code, body)
	}
}
