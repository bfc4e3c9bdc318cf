package approval

import (
	"unicode"

	"github.com/chiokernel/chio/internal/invisible"
)

// Blank reports whether s shows nothing: only white space, control
// characters and invisible ones (zero-width, bidi controls, fillers:
// invisible.Is). A typed answer or a denial's reason that is blank says
// nothing, however many bytes it has.
func Blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.IsControl(r) && !invisible.Is(r) {
			return false
		}
	}
	return true
}
