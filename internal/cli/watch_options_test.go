package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// TestWatchPicksAnOptionHoldingAComma: an ask's options are prose
// ("Oui, d'accord !"), so an option may hold a comma. `chio approval watch`
// split every typed answer on commas (found by review): typing "Yes,
// refund" signed ["Yes","refund"], and a single-choice option holding a
// comma could not be picked at all. A line that is exactly one option is
// that option; options are numbered, and numbers pick them.
func TestWatchPicksAnOptionHoldingAComma(t *testing.T) {
	const multi, single = `"type":"multi","options":["Yes, refund","Yes","refund"]`, `"type":"single","options":["Yes, refund","No"]`
	for _, c := range []struct{ name, question, typed, want string }{
		{"multi", multi, "Yes, refund", `"q":["Yes, refund"]`},
		{"multi by numbers", multi, "2, 3", `"q":["Yes","refund"]`},
		{"single", single, "Yes, refund", `"q":"Yes, refund"`},
		{"single by number", single, "1", `"q":"Yes, refund"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newApprovalWorld(t)
			out := w.submit(t, "ask", `{"prompt":"Refund?","questions":[{"id":"q","text":"Which",`+c.question+`}]}`, "")
			so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n"+c.typed+"\n\n"), "--key", w.key("lead"))
			rec, _ := w.k.Call(out.RequestID)
			if rec == nil || !strings.Contains(string(rec.Output), c.want) || !strings.Contains(so, "    1) Yes, refund\n    2) ") {
				t.Fatalf("typed %q; the call got %s\n%s\n%s", c.typed, outputOf(rec), so, se)
			}
		})
	}
}

func outputOf(rec *kernel.CallRecord) string {
	if rec == nil {
		return "no call"
	}
	return string(rec.Status) + " " + string(rec.Output)
}
