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
