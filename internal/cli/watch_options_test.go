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
	t.Run("multi", func(t *testing.T) {
		w := newApprovalWorld(t)
		out := w.submit(t, "ask", `{"prompt":"Refund?","questions":[{"id":"q","text":"Which","type":"multi",`+
			`"options":["Yes, refund","Yes","refund"]}]}`, "")
		so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\nYes, refund\n\n"), "--key", w.key("lead"))
		rec, _ := w.k.Call(out.RequestID)
		if rec == nil || !strings.Contains(string(rec.Output), `"q":["Yes, refund"]`) {
			t.Fatalf("typed the option \"Yes, refund\"; the call got %s\n%s\n%s", outputOf(rec), so, se)
		}
	})
	t.Run("multi by numbers", func(t *testing.T) {
		w := newApprovalWorld(t)
		out := w.submit(t, "ask", `{"prompt":"Refund?","questions":[{"id":"q","text":"Which","type":"multi",`+
			`"options":["Yes, refund","Yes","refund"]}]}`, "")
		so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n2, 3\n\n"), "--key", w.key("lead"))
		rec, _ := w.k.Call(out.RequestID)
		if rec == nil || !strings.Contains(string(rec.Output), `"q":["Yes","refund"]`) || !strings.Contains(so, "1) Yes, refund  2) Yes  3) refund") {
			t.Fatalf("typed 2, 3; the call got %s\n%s\n%s", outputOf(rec), so, se)
		}
	})
	t.Run("single by number", func(t *testing.T) {
		w := newApprovalWorld(t)
		out := w.submit(t, "ask", `{"prompt":"Refund?","questions":[{"id":"q","text":"Which","type":"single",`+
			`"options":["Yes, refund","No"]}]}`, "")
		so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n1\n\n"), "--key", w.key("lead"))
		rec, _ := w.k.Call(out.RequestID)
		if rec == nil || !strings.Contains(string(rec.Output), `"q":"Yes, refund"`) {
			t.Fatalf("typed 1; the call got %s\n%s\n%s", outputOf(rec), so, se)
		}
	})
	t.Run("single", func(t *testing.T) {
		w := newApprovalWorld(t)
		out := w.submit(t, "ask", `{"prompt":"Refund?","questions":[{"id":"q","text":"Which","type":"single",`+
			`"options":["Yes, refund","No"]}]}`, "")
		so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\nYes, refund\n\n"), "--key", w.key("lead"))
		rec, _ := w.k.Call(out.RequestID)
		if rec == nil || !strings.Contains(string(rec.Output), `"q":"Yes, refund"`) {
			t.Fatalf("typed the option \"Yes, refund\"; the call got %s\n%s\n%s", outputOf(rec), so, se)
		}
	})
}

func outputOf(rec *kernel.CallRecord) string {
	if rec == nil {
		return "no call"
	}
	return string(rec.Status) + " " + string(rec.Output)
}
