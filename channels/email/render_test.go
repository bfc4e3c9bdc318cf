package email

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chiokernel/chio/approval"
)

// The Amount is what the arguments move (the kernel's derived amount), not
// the agent's max_amount envelope.
func TestAmountIsWhatTheArgumentsMove(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, Summary: "Agent wants to charge issue_refund on pay for 300 USD: x",
		Amount: &approval.Amount{Units: 300, Currency: "USD"}, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		GovernedIntent: json.RawMessage(`{"purpose":"x","max_amount":{"units":450,"currency":"USD"}}`)}
	if v := newView(req, now); v.Amount != "300 USD" {
		t.Fatalf("email Amount = %q; the arguments move 300 USD (req.Amount)", v.Amount)
	}
}

// For a tool that declares no amount, the agent's max_amount is only its
// word, and the email says so (as the dashboard and Slack do).
func TestAmountDeclaredByTheAgentIsMarked(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, ExpiresAt: now.Add(time.Hour).Unix(), Quorum: 1,
		GovernedIntent: json.RawMessage(`{"purpose":"x","max_amount":{"units":5,"currency":"USD"}}`)}
	if v := newView(req, now); v.Amount != "up to 5 USD (declared by the agent)" {
		t.Fatalf("email Amount = %q: the agent's own claim, not marked as such", v.Amount)
	}
	req.GovernedIntent = json.RawMessage(`{"purpose":"x"}`)
	if v := newView(req, now); v.Amount != "" {
		t.Fatalf("no amount anywhere, yet Amount = %q", v.Amount)
	}
}

// clean cuts at a rune boundary: subjects and summaries stay valid UTF-8.
func TestCleanKeepsUTF8Valid(t *testing.T) {
	for n := 0; n <= 12; n++ {
		s := clean(strings.Repeat("€", 5), n) // 15 bytes, 3 per rune
		if !utf8.ValidString(s) {
			t.Fatalf("clean(…, %d) = %q: invalid UTF-8", n, s)
		}
		if len(strings.TrimSuffix(s, "…")) > n {
			t.Fatalf("clean(…, %d) = %q: longer than %d bytes before the ellipsis", n, s, n)
		}
	}
	v := view{Headline: strings.Repeat("€", 200)}
	if s := subject(v); !utf8.ValidString(s) {
		t.Fatalf("subject is invalid UTF-8: %q", s)
	}
}

// clean writes format characters (bidi overrides, zero-width characters,
// line separators) as visible escapes, so a mail client cannot be made to
// reorder or hide what the approver reads; controls become spaces.
func TestCleanEscapesFormatCharacters(t *testing.T) {
	cases := map[string]string{
		"IBAN \u202eDE89 3704":       `IBAN \u202EDE89 3704`,
		"pay\u200bpal \u2066x\u2069": `pay\u200Bpal \u2066x\u2069`,
		"a\u2028b \ufeffc\u00adD":    `a\u2028b \uFEFFc\u00ADD`,
		"tag\U000E0001":              `tag\U000E0001`,
		"450\r\x1b[2K 000":           `450 \u001B[2K 000`, // a control after a blank is a run: escaped
		"Rückerstattung 退款 €":        "Rückerstattung 退款 €",
	}
	for in, want := range cases {
		if got := clean(in, 500); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
	now := time.Unix(1_800_000_000, 0)
	req := &approval.Request{ApprovalID: "ar-1", Kind: approval.KindToolCall, Summary: "refund \u202eDE89", ExpiresAt: now.Add(time.Hour).Unix(),
		GovernedIntent: json.RawMessage(`{"purpose":"to \u202eDE89"}`)}
	if v := newView(req, now); strings.ContainsRune(v.Summary+v.Purpose+subject(v), '\u202e') {
		t.Fatalf("a raw U+202E reaches the email: %+v", v)
	}
}

// Characters that draw nothing or only a blank without being format
// characters (a combining grapheme joiner, variation selectors, Hangul
// fillers, the braille blank) are escaped too: raw, "DE89<filler> 3704"
// reads as "DE89 3704" in the approver's mail client.
func TestCleanEscapesInvisibleCharactersOutsideCf(t *testing.T) {
	cases := map[string]string{
		"DE89\u3164 3704\u034f":        `DE89\u3164 3704\u034F`,
		"450\u2800000 \uffa0\u115f":    `450\u2800000 \uFFA0\u115F`,
		"ok\ufe00 \u2764\ufe0f \u180b": `ok\uFE00 ❤\uFE0F \u180B`,
		"x\U000E0100":                  `x\U000E0100`,
	}
	for in, want := range cases {
		if got := clean(in, 500); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}
