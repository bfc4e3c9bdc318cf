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

// invisibleOutsideCf: characters that are not format characters (category
// Cf) but draw nothing, or only a blank where a letter would be: the
// default-ignorable code points of other categories (Unicode's
// DerivedCoreProperties) and two blank symbols. "approve 450<CGJ> USD" or
// a purpose of one Hangul filler reads as something else, or as nothing.
var invisibleOutsideCf = map[string]string{
	"CGJ U+034F": "\u034f", "VS1 U+FE00": "\ufe00", "VS14 U+FE0D": "\ufe0d",
	"VS17 U+E0100": "\U000E0100", "VS256 U+E01EF": "\U000E01EF",
	"Hangul filler U+115F": "\u115f", "Hangul filler U+1160": "\u1160", "Hangul filler U+3164": "\u3164", "Hangul filler U+FFA0": "\uffa0",
	"Mongolian FVS U+180B": "\u180b", "Mongolian FVS U+180C": "\u180c", "Mongolian FVS U+180D": "\u180d", "Mongolian FVS U+180F": "\u180f",
	"Khmer inherent vowel U+17B4": "\u17b4", "Khmer inherent vowel U+17B5": "\u17b5",
	"reserved default-ignorable U+2065": "\u2065", "reserved default-ignorable U+E0FFF": "\U000E0FFF",
	"braille blank U+2800": "\u2800", "null notehead U+1D159": "\U0001D159",
}

// shownCase is a call putting a character in one text field an approver
// reads.
type shownCase struct {
	field, tool, args, intent string
}

// shownCases puts bad in each such field: the intent's purpose, action
// category, currency, a context value and member name; a confirm's prompt;
// an ask's prompt, question id, text and option.
func shownCases(t *testing.T, bad string) []shownCase {
	t.Helper()
	type obj = map[string]any
	amount := obj{"units": 450, "currency": "USD"}
	intent := func(gi obj) string {
		b, err := json.Marshal(gi)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	args := func(a obj) string { b, _ := json.Marshal(a); return string(b) }
	ask := func(prompt, id, text, opt string) string {
		return args(obj{"prompt": prompt, "questions": []any{obj{"id": id, "text": text, "type": "single", "options": []string{"UPS", opt}}}})
	}
	refund := `{"amount":450,"currency":"USD"}`
	return []shownCase{
		{"governed_intent.purpose", "issue_refund", refund, intent(obj{"purpose": "approve 450" + bad + " USD", "max_amount": amount})},
		{"governed_intent.action_category", "issue_refund", refund, intent(obj{"purpose": "refund", "action_category": "refund" + bad, "max_amount": amount})},
		{"governed_intent.max_amount.currency", "issue_refund", refund, intent(obj{"purpose": "refund", "max_amount": obj{"units": 450, "currency": "USD" + bad}})},
		{"governed_intent.context", "issue_refund", refund, intent(obj{"purpose": "refund", "max_amount": amount, "context": obj{"ticket": []any{"T-1" + bad}}})},
		{"governed_intent.context", "issue_refund", refund, intent(obj{"purpose": "refund", "max_amount": amount, "context": obj{"ticket" + bad: 1}})},
		{"arguments.prompt", "confirm", args(obj{"prompt": "Deploy 2.4.0" + bad + " to staging?"}), ""},
		{"arguments.prompt", "ask", ask("Pick"+bad+" one", "carrier", "Carrier", "DHL"), ""},
		{"arguments.questions[0].id", "ask", ask("Pick", "carrier"+bad, "Carrier", "DHL"), ""},
		{"arguments.questions[0].text", "ask", ask("Pick", "carrier", "Carrier"+bad+" name", "DHL"), ""},
		{"arguments.questions[0].options[1]", "ask", ask("Pick", "carrier", "Carrier", "DHL"+bad), ""},
	}
}

// submitShown submits c to the fixture its tool belongs to.
func submitShown(t *testing.T, refunds *fixture, hitl *lf, c shownCase) (*kernel.Outcome, error) {
	t.Helper()
	f := refunds
	if c.tool != "issue_refund" {
		f = hitl.fixture
	}
	return f.k.Submit(context.Background(), f.call(t, c.tool, c.args, c.intent))
}

// refusedEverywhere checks that each character of chars, in each field
// fields keeps (all when nil), is refused as a malformed call naming the
// field, and that nothing was written.
func refusedEverywhere(t *testing.T, chars map[string]string, fields func(string) bool) {
	t.Helper()
	refunds, hitl := newFixture(t), hitlFixture(t)
	rs, rp := refunds.state(t)
	hs, hp := hitl.state(t)
	for name, bad := range chars {
		for _, c := range shownCases(t, bad) {
			if fields != nil && !fields(c.field) {
				continue
			}
			out, err := submitShown(t, refunds, hitl, c)
			if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), c.field) {
				t.Errorf("%s in %s (%s): got %v %+v, want ErrBadCall naming the field", name, c.field, c.tool, err, out)
			}
		}
	}
	if s, p := refunds.state(t); s != rs || p != rp {
		t.Errorf("refused intents changed the store: receipts %d→%d, pending %d→%d", rs, s, rp, p)
	}
	if s, p := hitl.state(t); s != hs || p != hp {
		t.Errorf("refused prompts changed the store: receipts %d→%d, pending %d→%d", hs, s, hp, p)
	}
}

// TestInvisibleCharsOutsideCfRefused: a default-ignorable character of
// another category than Cf (combining grapheme joiner, variation
// selectors, Hangul and Mongolian fillers and selectors), or a blank
// symbol, in any text an approver reads is refused like a format
// character: ErrBadCall naming the field, nothing written.
func TestInvisibleCharsOutsideCfRefused(t *testing.T) {
	refusedEverywhere(t, invisibleOutsideCf, nil)
}

// tagged spells s in Unicode tag characters: invisible ASCII, which a
// language model reading the text decodes.
func tagged(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(0xE0000 + r)
	}
	return b.String()
}

// TestHiddenTextInProseRefused: the joiners, the emoji presentation
// selectors and the tag characters pass in prose only where they spell
// something; elsewhere they hide text. A run of tag characters is a whole
// invisible sentence; runs of joiners or selectors, or one that follows no
// visible character, carry data the approver cannot see.
func TestHiddenTextInProseRefused(t *testing.T) {
	prose := map[string]string{
		"tag text":            tagged("wire 9000 EUR"),
		"lone tag":            "\U000E0067",
		"flag tags, no flag":  "\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F",
		"tags after a flag":   "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F" + tagged("hi"),
		"tags in a flag":      "\U0001F3F4" + tagged("gbenghi") + "\U000E007F",
		"joiner run":          "\u200d\u200c\u200d",
		"joiner after space":  " \u200dx",
		"VS16 after space":    " \ufe0f",
		"VS16 twice":          "\u2764\ufe0f\ufe0f",
		"VS15 and VS16":       "\u2764\ufe0e\ufe0f",
		"VS16 after a joiner": "\u200d\ufe0f",
	}
	refusedEverywhere(t, prose, nil)
	// At the very start there is no character to attach to.
	refunds := newFixture(t)
	for name, c := range map[string]string{"ZWJ": "\u200d", "ZWNJ": "\u200c", "VS16": "\ufe0f", "VS15": "\ufe0e"} {
		raw, _ := json.Marshal(map[string]any{"purpose": c + "refund", "max_amount": map[string]any{"units": 450, "currency": "USD"}})
		_, err := refunds.k.Submit(context.Background(), refunds.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, string(raw)))
		if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), "governed_intent.purpose") {
			t.Errorf("%s at the start of the purpose: %v, want ErrBadCall", name, err)
		}
	}
}

// TestBlankSpacesAndSelectorsRefusedInNames: in a name (action category,
// currency, context member name, question id) a no-break or other wide
// space looks like U+0020 and an emoji selector like nothing, so two
// different names would look the same: refused. U+0020 itself passes. (An
// ask's options are prose, checked against each other instead:
// TestNamesWithStraySpacesRefused, TestReviewAskOptionsWithEmojiPresentation.)
func TestBlankSpacesAndSelectorsRefusedInNames(t *testing.T) {
	names := map[string]string{
		"NBSP U+00A0": "\u00a0", "en quad U+2000": "\u2000", "hair space U+200A": "\u200a", "narrow NBSP U+202F": "\u202f",
		"math space U+205F": "\u205f", "ideographic space U+3000": "\u3000", "ogham space U+1680": "\u1680",
		"VS16 U+FE0F": "\u2705\ufe0f", "VS15 U+FE0E": "\u2705\ufe0e",
	}
	isName := func(field string) bool {
		return strings.HasSuffix(field, "action_category") || strings.HasSuffix(field, "currency") ||
			strings.HasSuffix(field, ".id")
	}
	refusedEverywhere(t, names, isName)
	// A context member name (the other context case puts bad in a value).
	f := newFixture(t)
	for name, bad := range names {
		_, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, intentJSON(t, "refund", "", json.RawMessage(`{"ticket`+bad+`":1}`))))
		if !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), "governed_intent.context") {
			t.Errorf("%s in a context member name: %v, want ErrBadCall", name, err)
		}
	}
	hitl := hitlFixture(t)
	args, _ := json.Marshal(map[string]any{"prompt": "Which carrier?", "questions": []any{
		map[string]any{"id": "carrier id", "text": "Carrier", "type": "single", "options": []string{"UPS ground", "DHL"}}}})
	if out, err := hitl.k.Submit(context.Background(), hitl.call(t, "ask", string(args), "")); err != nil || out.Status != kernel.StatusPendingApproval {
		t.Fatalf("names with U+0020: %v %+v", err, out)
	}
}

// TestProseSpellingAccepted: what people write still parks: emoji with
// presentation selectors, ZWJ sequences, keycaps, the England flag,
// Persian, Devanagari and Sinhala joiners, French no-break spaces and the
// ideographic space.
func TestProseSpellingAccepted(t *testing.T) {
	prose := []string{
		"Thanks \u2764\ufe0f", "Family plan \U0001F468\u200d\U0001F469\u200d\U0001F467", "Pride \U0001F3F3\ufe0f\u200d\U0001F308",
		"Eye \U0001F441\ufe0f\u200d\U0001F5E8\ufe0f", "Step 1\ufe0f\u20e3", "Return \u21a9\ufe0e",
		"Team \U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", "Wave \U0001F44B\U0001F3FD",
		"می\u200cخواهم", "क्\u200dष", "ශ්\u200dරී ලංකා", "Montant\u00a0: 450\u202f€ ?", "退款\u30008834",
	}
	refunds, hitl := newFixture(t), hitlFixture(t)
	for i, p := range prose {
		gi, _ := json.Marshal(map[string]any{"purpose": p, "max_amount": map[string]any{"units": 450, "currency": "USD"}, "context": map[string]any{"note": p}})
		out, err := refunds.k.Submit(context.Background(), refunds.call(t, "issue_refund", fmt.Sprintf(`{"amount":450,"currency":"USD","n":%d}`, i), string(gi)))
		if err != nil || out.Status != kernel.StatusPendingApproval {
			t.Errorf("purpose %q: %v %+v", p, err, out)
		}
		args, _ := json.Marshal(map[string]any{"prompt": p, "details": map[string]any{"n": i}})
		if out, err := hitl.k.Submit(context.Background(), hitl.call(t, "confirm", string(args), "")); err != nil || out.Status != kernel.StatusPendingApproval {
			t.Errorf("confirm prompt %q: %v %+v", p, err, out)
		}
	}
}

// TestNamesWithStraySpacesRefused: in a name, a space at either end or two
// in a row make two names look the same, so they are refused like a wide
// space; a single space between words is a name ("UPS ground"). An ask's
// options are prose, so two options of one question that differ only in
// spaces or invisible characters ("DHL" and "DHL ") are refused instead.
func TestNamesWithStraySpacesRefused(t *testing.T) {
	isName := func(field string) bool {
		return strings.HasSuffix(field, "action_category") || strings.HasSuffix(field, "currency") ||
			strings.HasSuffix(field, ".id")
	}
	refusedEverywhere(t, map[string]string{"a trailing space": " ", "two spaces": "  x"}, isName)
	hitl := hitlFixture(t)
	s, p := hitl.state(t)
	for _, opts := range [][]string{{"DHL", " DHL"}, {"DHL", "DHL "}, {"UPS  ground", "UPS ground"}, {"UPS ground", "UPS\u00a0ground"},
		{"Yes", "Yes\ufe0f"}, {"Ship", "Ship\u200d"}, {"Go", "DHL", "Go\u3000"}} {
		args, _ := json.Marshal(map[string]any{"prompt": "Which carrier?", "questions": []any{
			map[string]any{"id": "carrier", "text": "Carrier", "type": "single", "options": opts}}})
		if _, err := hitl.k.Submit(context.Background(), hitl.call(t, "ask", string(args), "")); !errors.Is(err, kernel.ErrBadCall) || !strings.Contains(err.Error(), "options") {
			t.Errorf("options %q: %v, want ErrBadCall naming the option", opts, err)
		}
	}
	f := newFixture(t)
	if _, err := f.k.Submit(context.Background(), f.call(t, "issue_refund", `{"amount":450,"currency":"USD"}`, intentJSON(t, "refund", "", json.RawMessage(`{" ticket":1}`)))); !errors.Is(err, kernel.ErrBadCall) {
		t.Errorf("context member name with a leading space: %v, want ErrBadCall", err)
	}
	if s2, p2 := hitl.state(t); s2 != s || p2 != p {
		t.Errorf("refused names changed the store: receipts %d→%d, pending %d→%d", s, s2, p, p2)
	}
}
