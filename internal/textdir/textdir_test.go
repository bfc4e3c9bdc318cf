package textdir

import (
	"reflect"
	"testing"
)

// TestRunsHoldOnlyRightToLeftWords: a run holds right-to-left letters,
// their marks and the spaces between them; digits (European or
// Arabic-Indic), Latin letters and punctuation stay outside, in stored
// order.
func TestRunsHoldOnlyRightToLeftWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Run
	}{
		{"IBAN DE89", []Run{{Text: "IBAN DE89"}}},
		{"שלום 1234 5678", []Run{{Text: "שלום", RTL: true}, {Text: " 1234 5678"}}},
		{"to שלום עולם  טוב, 12", []Run{{Text: "to "}, {Text: "שלום עולם  טוב", RTL: true}, {Text: ", 12"}}},
		{"مرحبا ١٢٣ x", []Run{{Text: "مرحبا", RTL: true}, {Text: " ١٢٣ x"}}},
		{"שָׁלוֹם ", []Run{{Text: "שָׁלוֹם", RTL: true}, {Text: " "}}},
	} {
		if got := Runs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Runs(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
	// Arabic-Indic digits (bidi class AN) are not letters, but two groups
	// of them alone are drawn swapped ("١٢٣ ٤٥٦" as "٤٥٦ ١٢٣"): the space
	// between them takes their direction. So text holding them is shown
	// in stored order too.
	for s, want := range map[string]bool{"DE89 ١٢٣": true, "x ש": true, "٣٣٣٣ ٤٤٤٤": true, "IBAN DE89 1234": false, "۱۲۳": false} {
		if HasRTL(s) != want {
			t.Errorf("HasRTL(%q) = %v, want %v", s, !want, want)
		}
	}
}
