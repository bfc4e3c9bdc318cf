package kernel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// refusedInShownText is one of each kind of character an approver's view
// could be rewritten with: a terminal's carriage return, escape, CSI (C1)
// and backspace, a newline, DEL, the bidi overrides and isolates, LRM, the
// zero-width characters, the BOM, the line separator and an astral
// format character (a language tag).
var refusedInShownText = map[string]string{
	"CR": "\r", "LF": "\n", "TAB": "\t", "ESC": "\x1b[1A", "BS": "\b", "DEL": "\x7f", "C1 CSI": "\u009b",
	"RLO": "\u202e", "LRE": "\u202a", "RLI": "\u2067", "PDI": "\u2069", "LRM": "\u200e", "RLM": "\u200f",
	"ZWSP": "\u200b", "WJ": "\u2060", "BOM": "\ufeff", "LS": "\u2028", "tag": "\U000E0001",
}

// TestJoinersPassInProseNotInNames: ZWNJ, ZWJ, the emoji presentation
// selector and a flag's tag characters are spelling in prose (Persian,
// Indic scripts, emoji sequences) and pass there; in a name (currency,
// action category, a context member name, a question id or option) an
// invisible character makes two names look alike, so there they are
// refused.
func TestJoinersPassInProseNotInNames(t *testing.T) {
	f := newFixture(t)
	type intent = map[string]any
	amount := intent{"units": 450, "currency": "USD"}
	england := "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"
	for name, j := range map[string]string{"ZWNJ": "\u200c", "ZWJ": "\u200d", "VS16": "\ufe0f", "flag tags": england} {
		prose := []intent{
			{"purpose": "refund" + j + " order", "max_amount": amount},
			{"purpose": "refund", "max_amount": amount, "context": intent{"note": []any{"T" + j + "1"}}},
		}
		for i, gi := range prose {
			raw, _ := json.Marshal(gi)
			out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","n":"%s%d"}`, name, i), string(raw)))
			if err != nil || out.Status != kernel.StatusPendingApproval {
				t.Errorf("%s in prose %v: %v %+v", name, gi, err, out)
			}
		}
		names := []struct {
			field string
			gi    intent
		}{
			{"governed_intent.action_category", intent{"purpose": "refund", "action_category": "refund" + j, "max_amount": amount}},
			{"governed_intent.max_amount.currency", intent{"purpose": "refund", "max_amount": intent{"units": 450, "currency": "USD" + j}}},
			{"governed_intent.context", intent{"purpose": "refund", "max_amount": amount, "context": intent{"ticket" + j: "T-1"}}},
		}
		for _, c := range names {
			raw, _ := json.Marshal(c.gi)
			_, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, string(raw)))
			if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s in the name %s: %v, want ErrBadCall naming it", name, c.field, err)
			}
		}
	}
}

// TestIntentTextWithControlOrFormatCharsRefused: the intent's purpose,
// action category, currency and context strings are shown to approvers as
// text, so a control or Unicode format character in any of them is refused
// as a malformed call naming the field, and changes nothing.
func TestIntentTextWithControlOrFormatCharsRefused(t *testing.T) {
	f := newFixture(t)
	seq, pending := f.state(t)
	type intent = map[string]any
	amount := intent{"units": 450, "currency": "USD"}
	for name, bad := range refusedInShownText {
		cases := []struct {
			field string
			gi    intent
		}{
			{"governed_intent.purpose", intent{"purpose": "refund order 8834" + bad + " for 450 USD", "max_amount": amount}},
			{"governed_intent.action_category", intent{"purpose": "refund", "action_category": "refund" + bad, "max_amount": amount}},
			{"governed_intent.max_amount.currency", intent{"purpose": "refund", "max_amount": intent{"units": 450, "currency": "USD" + bad}}},
			{"governed_intent.context", intent{"purpose": "refund", "max_amount": amount, "context": intent{"ticket": []any{"T-1" + bad}}}},
			{"governed_intent.context", intent{"purpose": "refund", "max_amount": amount, "context": intent{"ticket" + bad: 1}}},
		}
		for _, c := range cases {
			raw, err := json.Marshal(c.gi)
			if err != nil {
				t.Fatal(err)
			}
			call := f.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, string(raw))
			out, err := f.k.Submit(context.Background(), call)
			if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s in %s: got %v %+v, want ErrBadCall naming %s", name, c.field, err, out, c.field)
			}
		}
	}
	if s, p := f.state(t); s != seq || p != pending {
		t.Fatalf("refused intents changed the store: receipts %d→%d, pending %d→%d", seq, s, pending, p)
	}
	// Printable text in any script, symbols and emoji park as before.
	for i, purpose := range []string{"Rückerstattung für Bestellung Nº 8834 — 450 €", "退款 8834", "استرداد 8834", "refund 🎉 \\u202e"} {
		raw, _ := json.Marshal(intent{"purpose": purpose, "max_amount": amount, "context": intent{"note": purpose}})
		out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","n":%d}`, i), string(raw)))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Fatalf("%q: %v %+v", purpose, err, out)
		}
	}
}

// TestArgumentsMayHoldControlAndFormatChars: tool arguments are the tool's
// business; the kernel does not restrict them (every view escapes them).
func TestArgumentsMayHoldControlAndFormatChars(t *testing.T) {
	f := newFixture(t)
	args, _ := json.Marshal(map[string]any{"amount": 450, "currency": "USD", "iban": "\u202eDE89 3704\r\x1b[2K"})
	out, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", string(args), intentJSON(t, "refund", "", nil)))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("%v %+v", err, out)
	}
}

// TestConfirmAskTextWithControlOrFormatCharsRefused: a confirm's prompt
// and an ask's prompt, question ids, texts and options are shown as text;
// a control or format character in any of them is refused, naming it. A
// confirm's details are data and, like arguments, are not restricted.
func TestConfirmAskTextWithControlOrFormatCharsRefused(t *testing.T) {
	f := hitlFixture(t)
	seq, pending := f.state(t)
	q := func(id, text, opt string) string {
		b, _ := json.Marshal(map[string]any{"prompt": "Which carrier?", "questions": []any{
			map[string]any{"id": id, "text": text, "type": "single", "options": []string{"UPS", opt}}}})
		return string(b)
	}
	for name, bad := range refusedInShownText {
		prompt, _ := json.Marshal(map[string]any{"prompt": "Deploy 2.4.0" + bad + " to staging?"})
		askPrompt, _ := json.Marshal(map[string]any{"prompt": "Pick" + bad, "questions": []any{map[string]any{"id": "a", "text": "A", "type": "text"}}})
		cases := []struct{ tool, args, field string }{
			{"confirm", string(prompt), "arguments.prompt"},
			{"ask", string(askPrompt), "arguments.prompt"},
			{"ask", q("carrier"+bad, "Carrier", "DHL"), "arguments.questions[0].id"},
			{"ask", q("carrier", "Carrier"+bad, "DHL"), "arguments.questions[0].text"},
			{"ask", q("carrier", "Carrier", "DHL"+bad), "arguments.questions[0].options[1]"},
		}
		for _, c := range cases {
			out, err := f.k.Submit(context.Background(), f.call(t, c.tool, c.args, ""))
			if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s in %s %s: got %v %+v, want ErrBadCall naming %s", name, c.tool, c.field, err, out, c.field)
			}
		}
	}
	if s, p := f.state(t); s != seq || p != pending {
		t.Fatalf("refused prompts changed the store: receipts %d→%d, pending %d→%d", seq, s, pending, p)
	}
	details, _ := json.Marshal(map[string]any{"prompt": "Deploy?", "details": map[string]any{"note": "line one\nline two \u202e"}})
	out, err := f.k.Submit(context.Background(), f.call(t, "confirm", string(details), ""))
	if err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("confirm details: %v %+v", err, out)
	}
}

// The same rule for ask: a joiner in a question's text passes, in its id
// or an option it is refused.
func TestJoinersInAskNamesRefused(t *testing.T) {
	f := hitlFixture(t)
	ask := func(id, text, opt string) string {
		b, _ := json.Marshal(map[string]any{"prompt": "Which carrier?", "questions": []any{
			map[string]any{"id": id, "text": text, "type": "single", "options": []string{"UPS", opt}}}})
		return string(b)
	}
	if out, err := f.k.Submit(context.Background(), f.call(t, "ask", ask("carrier", "Carrier 👨\u200d👩\u200d👧?", "DHL"), "")); err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("ZWJ in a question's text: %v %+v", err, out)
	}
	for field, args := range map[string]string{
		"arguments.questions[0].id":         ask("carrier\u200d", "Carrier", "DHL"),
		"arguments.questions[0].options[1]": ask("carrier", "Carrier", "UPS\u200d"),
	} {
		if _, err := f.k.Submit(context.Background(), f.call(t, "ask", args, "")); !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), field) {
			t.Errorf("ZWJ in %s: %v", field, err)
		}
	}
}
