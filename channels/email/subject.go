package email

import (
	"strings"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/invisible"
	"github.com/chiokernel/chio/internal/textdir"
)

// The subject line of an approval email.
//
// A mail client draws the Subject header as plain text with the Unicode
// Bidirectional Algorithm, and nothing in a header can force an order:
// digits after a Hebrew or Arabic letter, or groups of Arabic-Indic
// digits, are drawn with their groups swapped ("refund 1234 5678" read as
// "refund 5678 1234"), in the inbox, before the approver opens anything.
// The body shows such text in stored order (stored_order.go); the subject
// cannot. So a summary the subject cannot show as stored is not put in it
// at all: the subject names the tool and the amount, when those can be
// shown, and asks the approver to open the message.

// openTheMessage ends a subject whose summary is shown only in the body.
const openTheMessage = "open the message to read the request"

// subject is the Subject header's text (writeMIME encodes it).
func subject(v view) string {
	prefix := "Approval needed"
	if v.Escalated {
		prefix = "Escalated: approval needed"
	}
	return clean(prefix+": "+v.Headline, 160)
}

// headline is what the subject says after its prefix: the request's
// summary when the subject can show it as stored, else the tool and the
// amount (each only if it can be shown so) and openTheMessage.
func headline(req *approval.Request, amount string) string {
	if shownAsStored(req.Summary) {
		return req.Summary
	}
	server, tool := req.ToolServer, req.ToolName
	var b strings.Builder
	if server != "" && tool != "" && shownAsStored(server+tool) {
		b.WriteString(server + " · " + tool)
		if amount != "" && shownAsStored(amount) {
			b.WriteString(" for " + amount)
		}
		b.WriteString(" — ")
	}
	b.WriteString(openTheMessage)
	return b.String()
}

// shownAsStored reports whether a mail client draws s in a subject as it
// is stored and as the body shows it: no character that reorders the text
// around it (textdir.Reorders), none the body writes as an escape
// (invisible.ShownEscaped: invisible and private-use characters, which a
// subject would show as "\u202E" noise or not at all), no stacked run of
// combining marks (invisible.HasStackedMarks), and no "=?", which
// in an all-ASCII header (sent as is) a mail client decodes as an RFC 2047
// encoded word: "=?utf-8?b?…?=" spelt in ASCII can decode to right-to-left
// text.
func shownAsStored(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return textdir.Reorders(r) || invisible.ShownEscaped(r) }) &&
		!invisible.HasStackedMarks(s) && !strings.Contains(s, "=?")
}
