package email

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"strings"
	"text/template"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/invisible"
)

// view is what the message and the link page show.
type view struct {
	Name       string
	Summary    string
	Headline   string // what the subject says after its prefix (subject.go)
	Purpose    string
	Amount     string
	Agent      string
	AgentShort string
	Tool       string
	Policy     string
	Kind       string
	Deadline   string // RFC 1123, UTC
	Left       string // "59m", "2h 5m"
	Quorum     string
	Status     string
	Link       string
	Dashboard  string
	ApprovalID string
	Escalated  bool
	Tier       int
	Skipped    string // approval.Request.SkippedNote: tiers passed over, and why
}

func newView(req *approval.Request, now time.Time) view {
	v := view{
		Summary: clean(req.Summary, 500), Agent: req.SubjectID, AgentShort: short(req.SubjectID),
		// The tool's name is the agent's choice under a glob grant: shown
		// as the other agent text is (clean), as Slack and the CLI show it.
		Tool: clean(req.ToolServer+" · "+req.ToolName, 600), Policy: req.PolicyID, Kind: req.Kind,
		Deadline: time.Unix(req.ExpiresAt, 0).UTC().Format(time.RFC1123), Status: req.Status,
		ApprovalID: req.ApprovalID, Tier: req.Tier + 1, Skipped: req.SkippedNote(),
	}
	v.Left = fmtLeft(time.Unix(req.ExpiresAt, 0).Sub(now))
	approved, _ := req.Progress()
	v.Quorum = fmt.Sprintf("%d of %d approvals", approved, max(req.Quorum, 1))
	var intent struct {
		Purpose   string `json:"purpose"`
		MaxAmount *struct {
			Units    json.Number `json:"units"`
			Currency string      `json:"currency"`
		} `json:"max_amount"`
	}
	if len(req.GovernedIntent) == 0 || json.Unmarshal(req.GovernedIntent, &intent) != nil {
		intent.Purpose, intent.MaxAmount = "", nil // show nothing half-decoded
	}
	v.Purpose = clean(intent.Purpose, 500)
	// As the dashboard shows it: the amount the kernel derived from the
	// arguments (what the tool will move); failing that, the agent's own
	// max_amount, marked as its unverified claim.
	var amount string
	switch {
	case req.Amount != nil:
		amount = fmt.Sprintf("%d %s", req.Amount.Units, req.Amount.Currency)
		v.Amount = clean(amount, 60)
	case intent.MaxAmount != nil:
		amount = "up to " + intent.MaxAmount.Units.String() + " " + intent.MaxAmount.Currency + " (declared by the agent)"
		v.Amount = clean(amount, 100)
	}
	v.Headline = headline(req, amount)
	return v
}

func fmtLeft(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dm", max(int(d.Minutes()), 1))
	}
}

// clean makes agent-supplied text safe for headers, plain text and HTML,
// and bounds its length. Control characters become spaces. Invisible
// characters (invisible.Is: bidi overrides and isolates, which reorder what
// a mail client draws; zero-width characters, variation selectors, fillers
// and blank symbols, which hide; line and paragraph separators) are written
// as visible escapes ("\u202E"), so the approver sees that they are there;
// so are private-use characters (invisible.ShownEscaped), which draw as
// whatever a font puts there, and a stacked run of combining marks
// (invisible.StackedMarks: more than four, or the same mark twice in a
// row), which draws as one character or none.
// (chiod refuses them in the text it shows, but for the joiners and
// selectors that spell prose; requests stored earlier, and arguments, may
// hold any of them.)
//
// In a run of spaces (category Zs, or control characters, drawn as
// spaces), every one after the first is written as an escape (\u0020,
// \u000A): the plain-text part lists fields one a line, indented, and a
// mail client wraps a long line where its window ends, so a run ended a
// line and drew the text after it as a line of the message's own
// ("  Amount:    1 USD"). The CLI, Slack and the dashboard write runs so.
func clean(s string, n int) string {
	var b strings.Builder
	afterBlank := false
	stacked := invisible.StackedMarks(s)
	for i, r := range s {
		blank := unicode.IsControl(r) || unicode.Is(unicode.Zs, r)
		switch {
		case blank && afterBlank:
			fmt.Fprintf(&b, `\u%04X`, r)
		case unicode.IsControl(r):
			b.WriteByte(' ')
		case invisible.ShownEscaped(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08X`, r)
		case invisible.ShownEscaped(r) || stacked.At(i):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
		afterBlank = blank
	}
	s = b.String()
	if len(s) > n {
		// Cut at a rune boundary: never split a UTF-8 sequence.
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return strings.TrimSpace(s)
}

func short(key string) string {
	h := strings.TrimPrefix(key, "ed25519:")
	if len(h) < 16 {
		return key
	}
	return "ed25519:" + h[:8] + "…" + h[len(h)-6:]
}

var textTmpl = template.Must(template.New("text").Funcs(template.FuncMap{"note": storedOrderNote}).Parse(`Hello {{.Name}},

An agent is waiting for your decision{{if .Escalated}} (escalated, tier {{.Tier}}){{end}}:

  {{.Summary}}{{note .Summary}}

{{if .Purpose}}  Purpose:   {{.Purpose}}{{note .Purpose}}
{{end}}{{if .Amount}}  Amount:    {{.Amount}}{{note .Amount}}
{{end}}  Agent:     {{.Agent}}
  Tool:      {{.Tool}}{{note .Tool}}
  Policy:    {{.Policy}}
  Quorum:    {{.Quorum}}
  Deadline:  {{.Deadline}} (in {{.Left}})
{{if .Skipped}}  Escalation: {{.Skipped}}
{{end}}
Review it and sign your decision with your own key:

  {{.Link}}

Opening the link decides nothing; you approve or deny on the page, which
signs in your browser. The link works once, until the deadline.

Request {{.ApprovalID}}
-- 
chio
`))

var htmlTmpl = htmltemplate.Must(htmltemplate.New("html").Funcs(htmltemplate.FuncMap{"stored": storedOrderHTML}).Parse(`<!doctype html>
<html><body style="margin:0;padding:24px;background:#f4f5f8;font-family:system-ui,-apple-system,Segoe UI,Roboto,Helvetica,Arial,sans-serif;color:#161a23">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td align="center">
<table role="presentation" width="560" cellpadding="0" cellspacing="0" style="background:#fff;border:1px solid #e3e6ee;border-radius:12px;padding:24px">
<tr><td>
<p style="margin:0 0 4px;font-size:12px;letter-spacing:.06em;text-transform:uppercase;color:#4f46e5;font-weight:700">{{if .Escalated}}Escalated · tier {{.Tier}}{{else}}Approval needed{{end}}</p>
<h1 style="margin:0 0 16px;font-size:19px;line-height:1.3">{{stored .Summary}}</h1>
<table role="presentation" cellpadding="4" cellspacing="0" style="font-size:14px">
{{if .Purpose}}<tr><td style="color:#7a8296">Purpose</td><td>{{stored .Purpose}}</td></tr>{{end}}
{{if .Amount}}<tr><td style="color:#7a8296">Amount</td><td><strong style="font-size:16px">{{stored .Amount}}</strong></td></tr>{{end}}
<tr><td style="color:#7a8296">Agent</td><td><code title="{{.Agent}}">{{.AgentShort}}</code></td></tr>
<tr><td style="color:#7a8296">Tool</td><td><code>{{stored .Tool}}</code></td></tr>
<tr><td style="color:#7a8296">Policy</td><td><code>{{.Policy}}</code></td></tr>
<tr><td style="color:#7a8296">Quorum</td><td>{{.Quorum}}</td></tr>
<tr><td style="color:#7a8296">Deadline</td><td>{{.Deadline}} (in {{.Left}})</td></tr>
{{if .Skipped}}<tr><td style="color:#7a8296">Escalation</td><td>{{.Skipped}}</td></tr>{{end}}
</table>
<p style="margin:20px 0"><a href="{{.Link}}" style="display:inline-block;background:#4f46e5;color:#fff;text-decoration:none;font-weight:600;padding:10px 20px;border-radius:8px">Review &amp; decide</a></p>
<p style="margin:0;color:#7a8296;font-size:12.5px">Opening the link decides nothing: you approve or deny on the page, which signs with your own key in your browser. The link works once, until the deadline.<br>Request <code>{{.ApprovalID}}</code></p>
</td></tr></table>
</td></tr></table>
</body></html>
`))

// writeMIME writes headers and a multipart/alternative body.
func writeMIME(w io.Writer, from, to, subj, host string, v view) error {
	var text, html bytes.Buffer
	if err := textTmpl.Execute(&text, v); err != nil {
		return err
	}
	if err := htmlTmpl.Execute(&html, v); err != nil {
		return err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct {
		ctype string
		data  []byte
	}{{"text/plain; charset=utf-8", text.Bytes()}, {"text/html; charset=utf-8", html.Bytes()}} {
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", part.ctype)
		h.Set("Content-Transfer-Encoding", "quoted-printable")
		pw, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		qp := quotedprintable.NewWriter(pw)
		if _, err := qp.Write(part.data); err != nil {
			return err
		}
		if err := qp.Close(); err != nil {
			return err
		}
	}
	if err := mw.Close(); err != nil {
		return err
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	hdr := []string{
		"From: " + from,
		"To: " + to,
		"Subject: " + mime.QEncoding.Encode("utf-8", subj),
		"Date: " + time.Now().UTC().Format(time.RFC1123Z),
		"Message-ID: <" + hex.EncodeToString(id[:]) + "@" + host + ">",
		"MIME-Version: 1.0",
		"Auto-Submitted: auto-generated",
		"Content-Type: multipart/alternative; boundary=" + mw.Boundary(),
	}
	if _, err := io.WriteString(w, strings.Join(hdr, "\r\n")+"\r\n\r\n"); err != nil {
		return err
	}
	_, err := w.Write(body.Bytes())
	return err
}
