package policy_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// invisibles are characters that draw nothing (or only a blank) or
// reorder the text around them: a name holding one can look exactly like
// another name.
var invisibles = map[string]string{
	"zero-width space":          "\u200b",
	"zero-width joiner":         "\u200d",
	"right-to-left override":    "\u202e",
	"right-to-left isolate":     "\u2067",
	"left-to-right mark":        "\u200e",
	"byte order mark":           "\ufeff",
	"soft hyphen":               "\u00ad",
	"word joiner":               "\u2060",
	"tag character":             "\U000e0041",
	"line separator":            "\u2028",
	"variation selector":        "\ufe0f",
	"hangul filler":             "\u3164",
	"combining grapheme joiner": "\u034f",
	"braille pattern blank":     "\u2800",
}

// The names a call carries (server, tool, operation) follow the policy's
// naming rule (policy.CheckName, which the kernel applies to every call):
// invisible and text-direction characters are refused like control
// characters, so "ec<ZWSP>ho" or a bidi-reversed name cannot pass for
// another on approvers' screens and in receipts.
func TestCallNamesRefuseInvisibleCharacters(t *testing.T) {
	for what, r := range invisibles {
		if err := policy.CheckName("ec" + r + "ho"); err == nil || !strings.Contains(err.Error(), "invisible or text-direction") {
			t.Errorf("%s: CheckName = %v", what, err)
		}
	}
	for _, ok := range []string{"echo", "issue_refund", "Zoë", "財務", "réglement-v2"} {
		if err := policy.CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// Policy names (server and grant ids, tool names, operations, approvers'
// display names) are refused with an invisible character, at their line.
func TestPolicyNamesRefuseInvisibleCharacters(t *testing.T) {
	const doc = `
[[servers]]
id = "SERVER"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "TOOL"

[[grants]]
id = "GRANT"
server = "SERVER"
tool = "TOOL"
operations = ["OPERATION"]
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "DISPLAY"
`
	plain := map[string]string{"SERVER": "pay", "TOOL": "refund", "GRANT": "refunds", "OPERATION": "invoke", "DISPLAY": "Finance Lead"}
	build := func(field, value string) []byte {
		var pairs []string
		for k, v := range plain {
			if k == field {
				v = value
			}
			pairs = append(pairs, k, v)
		}
		return []byte(strings.NewReplacer(pairs...).Replace(doc))
	}
	if _, err := policy.Parse(build("", ""), "names.toml"); err != nil {
		t.Fatalf("plain names: %v", err)
	}
	for field, v := range plain {
		for what, r := range invisibles {
			if field == "DISPLAY" && what == "zero-width joiner" {
				continue // allowed between visible characters: TestDisplayNamesAllowJoinersBetweenVisibleCharacters
			}
			spoof := v[:1] + r + v[1:]
			if _, err := policy.Parse(build(field, spoof), "names.toml"); err == nil || !strings.Contains(err.Error(), "invisible or text-direction") {
				t.Errorf("%s with a %s: err = %v", field, what, err)
			}
		}
	}
}

// approverDoc is a policy whose one approver's display_name is DISPLAY.
const approverDoc = `
[[servers]]
id = "pay"
transport = "http"
url = "http://127.0.0.1:9001"
[[servers.tools]]
name = "refund"

[[grants]]
id = "refunds"
server = "pay"
tool = "refund"
[grants.constraints]
require_approval_always = true
[grants.approval]
[[grants.approval.approvers]]
public_key = "` + financeLeadKey + `"
display_name = "DISPLAY"
`

// In an approver's display_name (prose shown escaped by every channel) the
// zero-width non-joiner and joiner are spelling: Persian and Indic names
// and emoji sequences need them. Each is allowed between two visible
// characters, and nowhere else; bidi controls and the other format
// characters stay refused, and ids and tool names admit no joiner at all.
func TestDisplayNamesAllowJoinersBetweenVisibleCharacters(t *testing.T) {
	parse := func(name string) error {
		_, err := policy.Parse([]byte(strings.Replace(approverDoc, "DISPLAY", name, 1)), "names.toml")
		return err
	}
	for what, name := range map[string]string{
		"Persian (ZWNJ)":     "علی\u200cرضا",
		"Devanagari (ZWJ)":   "क्\u200dष Rao",
		"emoji family (ZWJ)": "Ops 👨\u200d👩\u200d👧",
		"Malayalam (ZWNJ)":   "സ്\u200cനേഹ",
	} {
		if err := parse(name); err != nil {
			t.Errorf("%s: display_name %q refused: %v", what, name, err)
		}
	}
	for what, name := range map[string]string{
		"leading joiner":         "\u200dAlice",
		"trailing non-joiner":    "Alice\u200c",
		"two joiners":            "Al\u200d\u200dice",
		"joiner beside space":    "Alice \u200dLee",
		"joiner before bidi":     "Ali\u200d\u202ece",
		"right-to-left override": "Ali\u202ece",
		"zero-width space":       "Al\u200bice",
		"tag character":          "Al\U000e0041ice",
		"variation selector":     "Al\ufe0fice",
	} {
		if err := parse(name); err == nil || !strings.Contains(err.Error(), "invisible or text-direction") {
			t.Errorf("%s: display_name %q: err = %v; want it refused", what, name, err)
		}
	}
	// Names that identify something admit no joiner, even between letters.
	for _, r := range []string{"\u200c", "\u200d"} {
		if err := policy.CheckName("ec" + r + "ho"); err == nil {
			t.Errorf("CheckName(%q) accepted", "ec"+r+"ho")
		}
	}
}
