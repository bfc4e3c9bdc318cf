package kernel

import (
	"errors"
	"testing"

	"github.com/chiokernel/chio/policy"
)

// TestCanonicallyEquivalentOptionsRefused: two options that Unicode
// itself defines as the same text (canonically equivalent: a precomposed
// letter and its decomposition, a singleton such as KELVIN SIGN for K or
// GREEK QUESTION MARK for ';', combining marks in either order) are drawn
// identically, so an approver cannot tell them apart; lookalikeOptions
// must refuse them as it refuses "DHL" / "DHL ".
func TestCanonicallyEquivalentOptionsRefused(t *testing.T) {
	for _, pair := range [][2]string{
		{"Caf\u00e9", "Cafe\u0301"},        // é precomposed / e + COMBINING ACUTE
		{"OK", "O\u212a"},                  // K / KELVIN SIGN
		{"Yes;", "Yes\u037e"},              // ';' / GREEK QUESTION MARK
		{"\u00c5rhus", "\u212brhus"},       // Å / ANGSTROM SIGN
		{"a\u0323\u0301", "a\u0301\u0323"}, // the same two marks in either order
		{"\u2126 100", "\u03a9 100"},       // OHM SIGN / GREEK CAPITAL OMEGA
	} {
		args := `{"prompt":"Which?","questions":[{"id":"q1","text":"Pick one","type":"single","options":["` +
			pair[0] + `","` + pair[1] + `"]}]}`
		if err := checkHITLArgs(policy.ToolAsk, []byte(args)); !errors.Is(err, ErrBadCall) {
			t.Errorf("options %q and %q (canonically equivalent) accepted: %v", pair[0], pair[1], err)
		}
	}
}
