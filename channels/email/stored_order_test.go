package email

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/textdir"
)

// A mail client applies the Unicode Bidirectional Algorithm: digits after
// a Hebrew letter take its right-to-left direction, so a purpose
// "העברה 4321 8765" is drawn "8765 4321 העברה" with no control character
// at all. The HTML (of the message and of the link page) draws such text
// inside <bdo dir="ltr">, the Hebrew word alone in a <bdi dir="rtl">, the
// digits outside it; the plain-text part says it is in stored order; a
// private-use character (drawn as whatever a font puts there) is escaped.
func TestRightToLeftTextIsShownInStoredOrder(t *testing.T) {
	const (
		bdoOpen = `<bdo dir="ltr" title="contains right-to-left text; shown in stored order" style="unicode-bidi:bidi-override;direction:ltr">`
		bdiOpen = `<bdi dir="rtl" style="unicode-bidi:isolate;direction:rtl">`
	)
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, Status: "pending",
		Summary: "Refund העברה 4321 8765", ExpiresAt: now.Add(time.Hour).Unix(),
		GovernedIntent: json.RawMessage(`{"purpose":"העברה 4321 8765 \ue000"}`)}
	v := newView(req, now)
	var html, text bytes.Buffer
	if err := htmlTmpl.Execute(&html, v); err != nil {
		t.Fatal(err)
	}
	if err := textTmpl.Execute(&text, v); err != nil {
		t.Fatal(err)
	}

	c := testChannel(t, &now)
	approver := trustedBy(t, c, req)
	srv := httptest.NewServer(c.Handler(oneRequest{req}))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + LinkPath + c.Link("ar-1", approver, now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()

	for name, h := range map[string]string{"message": html.String(), "link page": string(page)} {
		for _, want := range []string{bdoOpen + "Refund " + bdiOpen + "העברה</bdi> 4321 8765</bdo>", bdoOpen + bdiOpen + "העברה</bdi> 4321 8765 \\uE000</bdo>"} {
			if !strings.Contains(h, want) {
				t.Errorf("the %s's HTML does not hold %s:\n%s", name, want, h)
			}
		}
		if strings.ContainsRune(h, '\ue000') {
			t.Errorf("the %s's HTML holds a raw private-use character", name)
		}
	}
	if !strings.Contains(text.String(), "Purpose:   העברה 4321 8765 \\uE000  ("+textdir.StoredOrderNote+")") {
		t.Errorf("the plain text does not say the purpose is in stored order:\n%s", text.String())
	}
}

// Arabic-Indic digits alone (no letter) reorder as well: the space between
// two groups takes their right-to-left direction, so "٣٣٣٣ ٤٤٤٤" would be
// drawn "٤٤٤٤ ٣٣٣٣". Such text is drawn in stored order too.
func TestArabicIndicDigitsAreShownInStoredOrder(t *testing.T) {
	const bdoOpen = `<bdo dir="ltr" title="contains right-to-left text; shown in stored order" style="unicode-bidi:bidi-override;direction:ltr">`
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, Status: "pending",
		Summary: "Refund ٣٣٣٣ ٤٤٤٤", ExpiresAt: now.Add(time.Hour).Unix()}
	var html bytes.Buffer
	if err := htmlTmpl.Execute(&html, newView(req, now)); err != nil {
		t.Fatal(err)
	}
	if want := bdoOpen + "Refund ٣٣٣٣ ٤٤٤٤</bdo>"; !strings.Contains(html.String(), want) {
		t.Errorf("the message's HTML does not hold %s:\n%s", want, html.String())
	}
}

// The subject cannot force an order: a summary that would reorder, or
// that holds a character the body escapes, stays out of it, and so do a
// tool name or an amount that would; the subject still says what kind of
// message it is.
func TestSubjectLeavesOutWhatItCannotShowAsStored(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		req       approval.Request
		escalated bool
		want      string
	}{
		{approval.Request{Summary: "refund \u202eDE89", ToolServer: "pay", ToolName: "refund", Amount: &approval.Amount{Units: 5, Currency: "EUR"}},
			true, "Escalated: approval needed: pay · refund for 5 EUR — open the message to read the request"},
		{approval.Request{Summary: "Proceed? שלום 12 34", Kind: approval.KindConfirm},
			false, "Approval needed: open the message to read the request"},
		{approval.Request{Summary: "x \ue000", ToolServer: "pay", ToolName: "שלום"},
			false, "Approval needed: open the message to read the request"},
		{approval.Request{Summary: "x \ue000", ToolServer: "pay", ToolName: "refund", Amount: &approval.Amount{Units: 5, Currency: "=?a?q?b?="}},
			false, "Approval needed: pay · refund — open the message to read the request"},
	} {
		c.req.ExpiresAt = now.Add(time.Hour).Unix()
		v := newView(&c.req, now)
		v.Escalated = c.escalated
		if got := subject(v); got != c.want {
			t.Errorf("summary %q: subject %q, want %q", c.req.Summary, got, c.want)
		}
	}
}
