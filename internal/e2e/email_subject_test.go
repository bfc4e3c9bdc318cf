package e2e

import (
	"mime"
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/invisible"
	"github.com/chiokernel/chio/internal/textdir"
)

// A mail client draws the Subject header with the Unicode Bidirectional
// Algorithm and no way to force an order: a summary "… 4321 8765" after a
// Hebrew word, or Arabic-Indic digit groups, reads with its groups swapped
// in the inbox. The subject of an approval email, as sent over SMTP and
// decoded as a mail client decodes it (RFC 2047 encoded words included),
// never holds a character that reorders, a private-use character or an
// invisible one: such a summary is replaced by a neutral phrase that sends
// the approver to the message body, which shows it in stored order. That
// holds for a summary that is plain ASCII yet spells an encoded word, which
// a mail client would decode into right-to-left text.
func TestEmailSubjectNeverReorders(t *testing.T) {
	mb := startMailbox(t)
	ek := startEmailKernel(t, mb)
	const neutral = "Approval needed: payments · issue_refund for 450 USD — open the message to read the request"
	cases := []struct{ purpose, subject string }{
		{"Refund for a damaged order", "Approval needed: Agent wants to charge issue_refund on payments for 450 USD: Refund for a damaged order"},
		{"העברה 4321 8765", neutral},
		{"refund ٣٣٣٣ ٤٤٤٤", neutral},
		{"refund \ue000 1234", neutral},
		{"thanks \u2764\ufe0f", neutral},
		// "עברה 4321 8765" as a base64 encoded word, in ASCII.
		{"=?utf-8?b?16LXkdeo15QgNDMyMSA4NzY1?=", neutral},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = ek.pendingRefund(t, 450, c.purpose).ApprovalRequestID
	}
	msgs := mb.wait(t, 2*len(cases)) // the Finance Lead and the CFO
	for i, c := range cases {
		var raw string
		for _, m := range msgs {
			if _, text, _ := parts(t, m.data); m.to[0] == "finance@example.com" && strings.Contains(text, ids[i]) {
				hdr, _, _ := parts(t, m.data)
				raw = hdr.Get("Subject")
			}
		}
		if raw == "" {
			t.Fatalf("no message for %s (%q)", ids[i], c.purpose)
		}
		subj, err := new(mime.WordDecoder).DecodeHeader(raw)
		if err != nil {
			t.Fatalf("purpose %q: the subject %q does not decode: %v", c.purpose, raw, err)
		}
		if r := strings.IndexFunc(subj, func(r rune) bool { return textdir.Reorders(r) || invisible.ShownEscaped(r) }); r >= 0 {
			t.Errorf("purpose %q: the subject a mail client shows, %q, holds %U", c.purpose, subj, []rune(subj[r:])[0])
		}
		if subj != c.subject {
			t.Errorf("purpose %q: the subject is %q (raw %q), want %q", c.purpose, subj, raw, c.subject)
		}
	}
	ek.noFailures(t)
}
