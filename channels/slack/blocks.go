package slack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/internal/invisible"
	"github.com/chiokernel/chio/internal/textdir"
)

// Action ids of the message's buttons, and the block that holds them.
const (
	ActionApprove = "chio_approve"
	ActionDeny    = "chio_deny"
	ActionReview  = "chio_review" // link button: Slack reports the click, chiod ignores it
	BlockActions  = "chio_actions"
)

// render builds a request's message: blocks and the notification text.
// complete is false when Slack's length limits cut any part of the request
// an approval is bound to (summary, amount, intent: purpose, category and
// context, tool, arguments): such
// a message offers no Approve button, and a click on one is refused (see
// click), because the approver would sign for what they were not shown.
func (c *Channel) render(req *approval.Request) (blocks []slackapi.Block, text string, complete bool) {
	approved, denied := req.Progress()
	var title string
	switch req.Status {
	case approval.StatusPending:
		title = ":bell: Approval requested"
		if req.Tier > 0 {
			title = fmt.Sprintf(":rotating_light: Approval escalated to tier %d", req.Tier+1)
		}
	case approval.StatusApproved:
		title = ":white_check_mark: Approved"
	case approval.StatusDenied:
		title = ":x: Denied"
	case approval.StatusExpired:
		title = ":hourglass: Expired (no decision before the deadline)"
	case approval.StatusCancelled:
		title = ":no_entry_sign: Cancelled"
	default:
		title = req.Status
	}
	// bound clips text the approval is bound to, and remembers a cut.
	complete = true
	bound := func(s string, n int) string {
		if len(s) > n {
			complete = false
		}
		return clip(s, n)
	}
	blocks = []slackapi.Block{
		slackapi.NewSectionBlock(mrkdwn(bound("*"+title+"*\n"+escape(req.Summary), maxSectionText)), nil, nil),
	}
	var fields []*slackapi.TextBlockObject
	field := func(k, v string) {
		if v != "" {
			fields = append(fields, mrkdwn(clip("*"+k+"*\n"+v, maxFieldText)))
		}
	}
	boundField := func(k, v string) {
		if v != "" {
			fields = append(fields, mrkdwn(bound("*"+k+"*\n"+v, maxFieldText)))
		}
	}
	in := parseIntent(req.GovernedIntent)
	boundField("Amount", escape(amountText(req.Amount, in.MaxAmount)))
	boundField("Intent", escape(in.Purpose))
	boundField("Category", escape(in.ActionCategory))
	if req.SubjectID != "" {
		// Named as the dashboard names it: by the label of its signed
		// capability, which 8 hex digits of a key (32 bits, another agent
		// can find a key that starts the same) cannot replace.
		agent := "`" + ShortKey(req.SubjectID) + "`"
		if req.SubjectLabel != "" {
			agent = escape(req.SubjectLabel) + " " + agent
		}
		field("Agent", agent)
	}
	if req.ToolServer != "" {
		tool := codeSpan(req.ToolServer + "/" + req.ToolName)
		if req.Action != "" {
			tool += " (" + escape(req.Action) + ")"
		}
		boundField("Tool", tool)
	}
	field("Deadline", slackDate(req.ExpiresAt))
	quorum := fmt.Sprintf("%d/%d approvals", approved, req.Quorum)
	if denied > 0 {
		quorum += fmt.Sprintf(", %d denied", denied)
	}
	field("Quorum", quorum)
	kind := req.Kind
	if req.Tier > 0 {
		kind += fmt.Sprintf(" · tier %d", req.Tier+1)
	}
	field("Kind", kind)
	blocks = append(blocks, slackapi.NewSectionBlock(nil, fields, nil))
	if holdsRTL(req, in) {
		blocks = append(blocks, slackapi.NewContextBlock("chio_rtl", mrkdwn(rtlNotice)))
	}
	if note := req.SkippedNote(); note != "" {
		// Why an approver of a later tier is asked with no earlier tier's wait.
		blocks = append(blocks, slackapi.NewContextBlock("chio_skipped", mrkdwn(escape(note))))
	}
	if len(in.Context) > 0 && string(in.Context) != "null" {
		// The agent's word besides its purpose: the approval binds it
		// (parameter_hash covers the whole intent), as the dashboard says.
		blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(bound("*Context (from the agent)*\n"+codeBlock(in.Context), maxSectionText)), nil, nil))
	}
	if len(req.Arguments) > 0 && req.Kind == approval.KindToolCall {
		blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(bound("*Arguments*\n"+codeBlock(req.Arguments), maxSectionText)), nil, nil))
	}
	// An approval with amended arguments decides the request (quorum 1):
	// the call it approved, the one sent to the tool, is shown under what
	// the agent asked for.
	for _, v := range req.Votes {
		if a := v.AmendedArguments(); a != nil {
			blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(clip(fmt.Sprintf("*Amended by %s: approved with these arguments instead of the ones above*\n%s",
				escape(who(v)), codeBlock(a)), maxSectionText)), nil, nil))
		}
	}
	if req.Kind == approval.KindConfirm {
		// A confirmation binds its details (they are in the arguments the
		// token covers, and the agent acts on them): they are shown, or the
		// message offers no Approve.
		switch c, err := approval.ParseConfirm(req.Arguments); {
		case err != nil:
			complete = false
		case len(c.Details) > 0 && string(c.Details) != "null":
			blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(bound("*Details*\n"+codeBlock(c.Details), maxSectionText)), nil, nil))
		}
	}
	if req.Kind == approval.KindQuestion {
		var qs []approval.Question
		_ = json.Unmarshal(req.Questions, &qs)
		var b strings.Builder
		b.WriteString("*Questions* (answer in the dashboard)")
		for i, q := range qs {
			fmt.Fprintf(&b, "\n%d. %s", i+1, escape(q.Text))
			if len(q.Options) > 0 {
				fmt.Fprintf(&b, " _(%s)_", escape(strings.Join(q.Options, " / ")))
			}
		}
		blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(clip(b.String(), maxSectionText)), nil, nil))
	}
	if len(req.Votes) > 0 || req.Resolution != nil {
		var lines []string
		for _, v := range req.Votes {
			icon := ":white_check_mark:"
			if v.Decision != approval.DecisionApproved {
				icon = ":x:"
			}
			line := fmt.Sprintf("%s %s *%s* via %s", icon, escape(who(v)), v.Decision, escape(v.Channel))
			if note := req.UncountedNote(&v); note != "" {
				line += " (" + note + ")" // counted as Progress counts
			}
			if v.Custodial {
				line += " (custodial key)"
			}
			if v.AmendedArguments() != nil {
				line += " with amended arguments"
			}
			if v.Note != "" {
				line += ": " + shownNote(v.Note, "note", req.ApprovalID)
			}
			lines = append(lines, line)
		}
		if res := req.Resolution; res != nil {
			line := "*" + res.Outcome + "*"
			if res.Reason != "" && req.Status != approval.StatusDenied {
				line += ": " + shownNote(res.Reason, "reason", req.ApprovalID)
			}
			if res.ReceiptID != "" {
				line += " · receipt `" + escape(res.ReceiptID) + "`"
			}
			lines = append(lines, line)
		}
		// Room is left for the actions block and the notice above it.
		blocks = append(blocks, votesBlocks(lines, maxBlocks-len(blocks)-2, req.ApprovalID)...)
	}
	review := slackapi.NewButtonBlockElement(ActionReview, req.ApprovalID, plain("Review & sign")).WithURL(c.DashboardURL(req.ApprovalID))
	if req.Status == approval.StatusPending {
		var els []slackapi.BlockElement
		switch {
		case req.Kind == approval.KindQuestion:
		case !complete:
			// Denying what was cut is safe; approving it is not.
			blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(clippedNotice(c.DashboardURL(req.ApprovalID))), nil, nil))
		default:
			els = append(els, slackapi.NewButtonBlockElement(ActionApprove, req.ApprovalID, plain("Approve")).WithStyle(slackapi.StylePrimary))
		}
		els = append(els, slackapi.NewButtonBlockElement(ActionDeny, req.ApprovalID, plain("Deny")).WithStyle(slackapi.StyleDanger), review)
		blocks = append(blocks, slackapi.NewActionBlock(BlockActions, els...))
	} else {
		review.Text = plain("View in dashboard")
		blocks = append(blocks, slackapi.NewActionBlock(BlockActions, review))
	}
	text = clip(withoutEmoji(title)+": "+escape(req.Summary), maxFallback)
	return blocks, text, complete
}

// withoutEmoji is a title without its leading emoji code (":bell: "):
// the notification text is read where Slack does not draw the code.
func withoutEmoji(title string) string {
	if rest, ok := strings.CutPrefix(title, ":"); ok {
		if _, words, ok := strings.Cut(rest, ": "); ok {
			return words
		}
	}
	return title
}

// clippedNotice says why a message offers no Approve button.
func clippedNotice(dashboard string) string {
	return ":warning: *This request is too long for Slack to show in full, so it cannot be approved here.* " +
		"Read all of it and sign in the dashboard: <" + dashboard + "|Review & sign>. Deny works here."
}

// amountText is the amount the dashboard shows: the amount the kernel
// derived from the arguments (what the tool will move); failing that, the
// agent's own max_amount, marked as its unverified claim.
func amountText(derived, declared *approval.Amount) string {
	switch {
	case derived != nil:
		return fmt.Sprintf("%d %s", derived.Units, derived.Currency)
	case declared != nil:
		return fmt.Sprintf("up to %d %s (declared by the agent)", declared.Units, declared.Currency)
	}
	return ""
}

func who(v approval.Vote) string {
	if v.DisplayName != "" {
		return v.DisplayName
	}
	return ShortKey(v.Approver)
}

type intent struct {
	Purpose        string           `json:"purpose"`
	MaxAmount      *approval.Amount `json:"max_amount"`
	ActionCategory string           `json:"action_category"`
	Context        json.RawMessage  `json:"context"`
}

func parseIntent(raw json.RawMessage) intent {
	var in intent
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &in)
	}
	return in
}

// ShortKey abbreviates an `ed25519:<hex>` key to its first 8 hex digits.
func ShortKey(k string) string {
	hexPart, ok := strings.CutPrefix(k, "ed25519:")
	if !ok || len(hexPart) <= 12 {
		return k
	}
	return "ed25519:" + hexPart[:8] + "…"
}

// slackDate renders a unix time in the reader's own time zone, with a UTC
// fallback for clients that cannot.
func slackDate(unix int64) string {
	utc := time.Unix(unix, 0).UTC().Format("2006-01-02 15:04 UTC")
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", unix, utc)
}

func mrkdwn(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, s, false, true)
}

func plain(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, false, false)
}

// codeBlock shows JSON literally in a ``` block. A backtick can only stand
// inside a JSON string, where \u0060 is the same value: written so, the
// agent's text cannot close the block and have the rest drawn as mrkdwn
// (a payee struck through, a note in bold). A member name that mixes
// scripts ("tо", a Cyrillic о, next to "to") has its non-ASCII letters
// written as escapes (invisible.LookalikeNames), as the CLI writes them.
func codeBlock(jsonText []byte) string {
	// Compacted: the whitespace between members (an amended_arguments as
	// the approver's token spelt it may hold line breaks) is left out, not
	// written as escapes (escaped).
	var b bytes.Buffer
	if json.Compact(&b, jsonText) == nil {
		jsonText = b.Bytes()
	}
	return "```" + strings.ReplaceAll(escapeMarked(string(jsonText), invisible.LookalikeNames(string(jsonText))), "`", `\u0060`) + "```"
}

// codeSpan puts untrusted text (a tool's name: the naming rule allows a
// backtick, and a glob grant lets the agent choose it) in an inline code
// span it cannot close: a backtick inside is written \u0060, as codeBlock
// writes it.
func codeSpan(s string) string {
	return "`" + strings.ReplaceAll(escape(s), "`", `\u0060`) + "`"
}

// escape neutralises Slack's control characters in untrusted text (agent
// summaries, notes, arguments): no mentions, links or channel pings can be
// injected. Control characters (a line break in an approver's note) and
// invisible characters (invisible.Is: bidi overrides and
// isolates, zero-width characters, line / paragraph separators, variation
// selectors, fillers, blank symbols) and private-use ones (drawn as
// whatever a font puts there) are shown as visible escapes, \u202E, so
// that they cannot reorder or hide what the approver reads (an IBAN drawn
// right to left); inside the JSON of the arguments such an escape still
// reads as the same value.
//
// Right-to-left letters (textdir.IsRTL: Hebrew, Arabic…) and Arabic
// numbers (Arabic-Indic digits, which reorder alone) are escaped too
// (textdir.Reorders).
// With no control character at all, Slack's renderer applies the Unicode
// Bidirectional Algorithm: digits after such a letter take its direction,
// so "שלום 1234 5678" is drawn "5678 1234 םולש", and a value starting
// with one turns the paragraph right to left. Slack has no markup that
// forces an order (mrkdwn has no <bdo>; override characters are text
// Slack's clients may reorder, strip or mishandle), while a message
// holding no right-to-left character has nothing the algorithm could
// reorder: every character left is left-to-right or neutral. So they are
// written as \u05E9, in stored order; rtlNotice says so and points to
// the dashboard, which draws them readable and in stored order.
//
// A stacked run of combining marks (invisible.StackedMarks: more than
// four, or the same mark twice in a row) is written as escapes too: it
// draws as one character or none, while the tool gets every mark.
//
// In a run of spaces, every space after the first is written as an escape
// too (\u0020). Slack keeps runs of spaces and wraps a line where the
// reader's window ends, spaces hanging past it: the text after a long run
// started a line of its own, so a note "duplicate", spaces, then
// ":white_check_mark: Finance Lead *approved* via dashboard" drew a vote
// line under the real one, as a line break did.
func escape(s string) string { return escapeMarked(s, nil) }

// escapeMarked is escape that also writes the bytes marked (a look-alike
// member name's letters: invisible.LookalikeNames) as escapes.
func escapeMarked(s string, marked invisible.Stacked) string {
	var b strings.Builder
	afterSpace := false
	stacked := invisible.StackedMarks(s)
	for i, r := range s {
		escapeRune(&b, r, afterSpace, stacked.At(i) || marked.At(i))
		afterSpace = isSpace(r)
	}
	return b.String()
}

// escapeRune writes r as escape does; afterSpace: r follows a space;
// stacked: r is a mark of a stacked run (invisible.StackedMarks).
func escapeRune(b *strings.Builder, r rune, afterSpace, stacked bool) {
	switch {
	case r == '&':
		b.WriteString("&amp;")
	case r == '<':
		b.WriteString("&lt;")
	case r == '>':
		b.WriteString("&gt;")
	case !escaped(r) && !(afterSpace && isSpace(r)) && !stacked:
		b.WriteRune(r)
	case r > 0xFFFF: // as a JSON surrogate pair
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, "\\u%04X\\u%04X", r1, r2)
	default:
		fmt.Fprintf(b, "\\u%04X", r)
	}
}

// isSpace: a space character (category Zs: U+0020, the no-break and the
// other wide spaces).
func isSpace(r rune) bool { return unicode.Is(unicode.Zs, r) }

// escaped: what escape writes as \uXXXX. Control characters (C0, DEL,
// C1) too: chiod refuses them in the agent's prose, but not in an
// approver's note or reason, and a line break there drew a line of its own
// in the votes block, a forged vote ("✅ CFO approved") under the real one.
// Inside the JSON of the arguments a control character can stand only in a
// string (codeBlock compacts the JSON first), where \u000A is the same value.
func escaped(r rune) bool {
	return unicode.IsControl(r) || invisible.ShownEscaped(r) || textdir.Reorders(r)
}

// rtlNotice is shown under a request whose text holds right-to-left
// letters, which escape writes as \uXXXX.
const rtlNotice = "_Right-to-left text is written as \\uXXXX escapes, in the order the tool receives it " +
	"(Slack would draw digits after it reordered); the dashboard shows it as words, in the same order._"

// holdsRTL reports whether any request text the message shows holds a
// right-to-left letter.
func holdsRTL(req *approval.Request, in intent) bool {
	texts := []string{req.Summary, in.Purpose, in.ActionCategory, string(in.Context), req.SubjectLabel, string(req.Arguments), string(req.Questions)}
	for _, v := range req.Votes {
		texts = append(texts, v.Note, string(v.AmendedArguments()))
	}
	if req.Resolution != nil {
		texts = append(texts, req.Resolution.Reason)
	}
	return slices.ContainsFunc(texts, textdir.HasRTL)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
