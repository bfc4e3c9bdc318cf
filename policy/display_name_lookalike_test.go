package policy

import (
	"fmt"
	"testing"
)

// Two approvers of one grant whose display names read the same to a
// person: receipts ("approver_display_name", "denied by …"), Slack
// messages, emails and the dashboard name approvers by display_name, so
// "Alice" and "Alice " (or "alice", or "Café" spelled with a combining
// accent) would let one approver's vote pass as the other's to whoever
// reads them. They are refused as an exact duplicate is: equal once
// letter case, Unicode canonical composition (NFC), runs of white space,
// spaces at the ends and the joiners a display name may hold are set
// aside.
func TestApproverDisplayNamesThatReadAlikeAreRefused(t *testing.T) {
	for _, pair := range [][2]string{
		{"Alice", "Alice "},
		{"Alice", " Alice"},
		{"Alice", "alice"},
		{"Alice Smith", "Alice  Smith"},
		{"Alice Smith", "Alice\u00a0Smith"},
		{"Caf\u00e9", "Cafe\u0301"},
		{"Ali\u200dce", "Alice"},
	} {
		toml := approvalHead + fmt.Sprintf(`
[[grants.approval.approvers]]
public_key = "KEY_A"
display_name = %q
[[grants.approval.approvers]]
public_key = "KEY_B"
display_name = %q  # <-
`, pair[0], pair[1])
		t.Run(fmt.Sprintf("%q/%q", pair[0], pair[1]), func(t *testing.T) {
			checkInvalid(t, "look-alike display names", toml, "reads the same as")
		})
	}
}

// The same holds for names that differ only in character width or by a
// compatibility form ("Ａｌｉｃｅ" in full-width letters, "𝐀𝐥𝐢𝐜𝐞" in
// mathematical bold, a "ﬁ" ligature), which Unicode compatibility
// composition (NFKC) makes one text and a person reads as the same name,
// and for letter case beyond a per-letter lower case (the final sigma of
// "Οδυσσευς" and the "ß" of "Straße" are "ΟΔΥΣΣΕΥΣ" and "STRASSE" in
// upper case): full case folding.
func TestApproverDisplayNamesThatReadAlikeByWidthOrFoldingAreRefused(t *testing.T) {
	for _, pair := range [][2]string{
		{"Alice", "\uff21\uff4c\uff49\uff43\uff45"},                     // full-width
		{"Alice", "\U0001d400\U0001d425\U0001d422\U0001d41c\U0001d41e"}, // mathematical bold
		{"Fiona", "\ufb01ona"},                                          // fi ligature
		{"\u039f\u03b4\u03c5\u03c3\u03c3\u03b5\u03c5\u03c2", "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3"}, // final sigma
		{"Stra\u00dfe", "STRASSE"},
	} {
		toml := approvalHead + fmt.Sprintf(`
[[grants.approval.approvers]]
public_key = "KEY_A"
display_name = %q
[[grants.approval.approvers]]
public_key = "KEY_B"
display_name = %q  # <-
`, pair[0], pair[1])
		t.Run(fmt.Sprintf("%q/%q", pair[0], pair[1]), func(t *testing.T) {
			checkInvalid(t, "look-alike display names", toml, "reads the same as")
		})
	}
}
