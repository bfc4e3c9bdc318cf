package email

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// A request sent to the email channel whose trusted approvers have no
// contact.email reaches nobody. Deliver used to return nil: the hub
// counted it delivered and nothing was recorded on the request's
// notify_errors, so a grant whose channels are ["email"] (or an escalation
// tier whose approvers have no address) left its approvers untold with
// every sign of success. It must fail, permanently (a retry cannot find an
// address), saying nobody was mailed.
func TestNoApproverWithAnAddressIsAFailure(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := testChannel(t, &now)
	k, _ := keys.Generate(nil)
	noMail := fmt.Sprintf("[[grants.approval.approvers]]\npublic_key = %q\ndisplay_name = \"Lead\"\n", k.Public().String())
	p, err := policy.Parse([]byte(fmt.Sprintf(twoApproversPolicy, noMail)), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	c.o.Policy = func() *policy.Policy { return p }
	req := &approval.Request{ApprovalID: "ar-1", Status: approval.StatusPending, Summary: "delete a file",
		ToolServer: "pay", ToolName: "delete_file", PolicyID: "deploys", Quorum: 1,
		TrustedApprovers: []string{k.Public().String()}, ExpiresAt: now.Add(time.Hour).Unix()}
	for _, event := range []string{"approval.requested", "approval.escalated"} {
		err := c.Deliver(channels.WithDeliveryID(context.Background(), "d-"+event), event, req)
		if !errors.Is(err, channels.ErrPermanent) || !strings.Contains(err.Error(), "contact.email") {
			t.Fatalf("%s to a request none of whose approvers has contact.email: %v, want a permanent failure naming contact.email", event, err)
		}
	}
}
