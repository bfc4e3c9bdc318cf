package slack_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
)

// actionIDs lists the action ids of a message's buttons.
func actionIDs(t *testing.T, b []map[string]any) []string {
	t.Helper()
	act := b[len(b)-1]
	if act["type"] != "actions" {
		t.Fatalf("last block is not the actions block: %v", act)
	}
	var ids []string
	for _, e := range act["elements"].([]any) {
		ids = append(ids, e.(map[string]any)["action_id"].(string))
	}
	return ids
}

// assertClippedMessage checks that a message cut by Slack's limits offers
// no Approve button, says why, and points to the dashboard; Deny stays.
func assertClippedMessage(t *testing.T, b []map[string]any, id string) {
	t.Helper()
	ids := strings.Join(actionIDs(t, b), ",")
	if strings.Contains(ids, slack.ActionApprove) {
		t.Fatalf("a message that does not show the whole request offers Approve: %s", ids)
	}
	if !strings.Contains(ids, slack.ActionDeny) || !strings.Contains(ids, slack.ActionReview) {
		t.Fatalf("Deny and Review & sign should stay: %s", ids)
	}
	txt, _ := b[len(b)-2]["text"].(map[string]any)
	notice, _ := txt["text"].(string)
	if !strings.Contains(notice, "too long for Slack to show in full") || !strings.Contains(notice, "<"+publicURL+"/dashboard/#request="+id+"|Review & sign>") {
		t.Fatalf("the message does not say why there is no Approve, or where to sign: %.300s", notice)
	}
}

// assertApproveRefused sends an Approve click for a clipped request (a
// forged or old button) and checks that nothing was signed.
func (w *world) assertApproveRefused(t *testing.T, id, requestID string) {
	t.Helper()
	if code := w.click(lead, slack.ActionApprove, id); code != 200 {
		t.Fatalf("click: %d", code)
	}
	w.assertUntouched(t, id, requestID)
	e := w.ephemeralTo(leadID)
	if len(e) != 1 || !strings.Contains(e[0], "cannot approve") ||
		!strings.Contains(e[0], "<"+publicURL+"/dashboard/#request="+id+"|Review & sign in the dashboard>") {
		t.Fatalf("ephemeral: %v", e)
	}
}

// JCS sorts keys, so an agent can put a long field first and the one that
// matters last, past Slack's cut. A custodial click must not sign for the
// field the message never showed; denying stays possible.
func TestCustodialApproveRefusedWhenArgumentsClipped(t *testing.T) {
	w := newWorld(t)
	args := fmt.Sprintf(`{"amount":450,"currency":"USD","customer_id":"cust-1","memo":"%s","zz_refund_to":"acct-MALLORY-0xdead"}`,
		strings.Repeat("x", 3000))
	out := w.submit(t, "issue_refund", args, `{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	id := out.ApprovalRequestID
	msg := w.posted(t, id)
	if strings.Contains(msg.Get("blocks"), "acct-MALLORY-0xdead") {
		t.Fatal("test premise: the last field should be cut from the message")
	}
	assertClippedMessage(t, blocks(t, msg), id)
	w.assertApproveRefused(t, id, out.RequestID)

	if code := w.click(lead, slack.ActionDeny, id); code != 200 {
		t.Fatalf("deny click: %d", code)
	}
	if req := w.approval(t, id); req.Status != approval.StatusDenied || len(req.Votes) != 1 || !req.Votes[0].Custodial {
		t.Fatalf("a custodial Deny of a clipped request should count: %+v", req)
	}
}

// Any bound field counts, not only the arguments: a purpose that escaping
// makes longer than a Slack field is cut too.
func TestCustodialApproveRefusedWhenIntentClipped(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"cust-1","amount":450,"currency":"USD"}`,
		`{"purpose":"`+strings.Repeat("<", 1000)+`","max_amount":{"units":450,"currency":"USD"}}`)
	id := out.ApprovalRequestID
	msg := w.posted(t, id)
	assertClippedMessage(t, blocks(t, msg), id)
	w.assertApproveRefused(t, id, out.RequestID)
}

// A request that fits keeps its Approve button and no notice.
func TestApproveOfferedWhenRequestFits(t *testing.T) {
	w := newWorld(t)
	out := w.submit(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","customer_id":"cust-1","memo":"%s"}`, strings.Repeat("x", 2000)),
		`{"purpose":"order 8834","max_amount":{"units":450,"currency":"USD"}}`)
	msg := w.posted(t, out.ApprovalRequestID)
	if ids := actionIDs(t, blocks(t, msg)); ids[0] != slack.ActionApprove {
		t.Fatalf("buttons: %v", ids)
	}
	if strings.Contains(msg.Get("blocks"), "too long") {
		t.Fatalf("notice on a message that fits: %s", msg.Get("blocks"))
	}
}
