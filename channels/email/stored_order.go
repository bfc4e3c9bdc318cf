package email

import (
	htmltemplate "html/template"
	"strings"

	"github.com/chiokernel/chio/internal/textdir"
)

// Right-to-left text from a request, shown in stored order.
//
// A mail client (and the link page's browser) applies the Unicode
// Bidirectional Algorithm: digits after a Hebrew or Arabic letter take its
// right-to-left direction, so a purpose "העברה 4321 8765" is drawn
// "8765 4321 העברה" and the approver reads the groups of an account
// number swapped. Isolating the value (<bdi>) does not help: the
// reordering happens inside it. So text holding right-to-left letters is
// drawn inside <bdo dir="ltr">, an override that draws everything in it
// left to right in stored order, and each run of right-to-left words
// (textdir.Runs: letters, marks and the spaces between them, never a
// digit or punctuation) inside its own <bdi dir="rtl">, so words stay
// readable. The inline styles say the same for clients that ignore the
// elements' meaning but keep styles.

const (
	bdoStoredOrder = `<bdo dir="ltr" title="` + textdir.StoredOrderNote + `" style="unicode-bidi:bidi-override;direction:ltr">`
	bdiRTL         = `<bdi dir="rtl" style="unicode-bidi:isolate;direction:rtl">`
)

// storedOrderHTML returns s escaped as HTML, in stored order as above.
func storedOrderHTML(s string) htmltemplate.HTML {
	if !textdir.HasRTL(s) {
		return htmltemplate.HTML(htmltemplate.HTMLEscapeString(s))
	}
	var b strings.Builder
	b.WriteString(bdoStoredOrder)
	for _, run := range textdir.Runs(s) {
		if run.RTL {
			b.WriteString(bdiRTL + htmltemplate.HTMLEscapeString(run.Text) + "</bdi>")
		} else {
			b.WriteString(htmltemplate.HTMLEscapeString(run.Text))
		}
	}
	b.WriteString("</bdo>")
	return htmltemplate.HTML(b.String())
}

// storedOrderNote is what the plain-text part adds after a value holding
// right-to-left text: a plain-text reader applies the algorithm too, and
// the note says the bytes are in the order the tool receives them.
func storedOrderNote(s string) string {
	if !textdir.HasRTL(s) {
		return ""
	}
	return "  (" + textdir.StoredOrderNote + ")"
}
