package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/kernel"
)

// TestReviewWatchPicksAnOptionHoldingAComma: an ask's options are prose
// (4be9f6a: "Oui, d'accord !" is the commit's own example), so an option may
// hold a comma. `chio approval watch` splits every typed answer on commas:
// an approver who types an option exactly as shown must get that option,
// never two others, and a single-choice option holding a comma must be
// pickable at all.
func TestReviewWatchPicksAnOptionHoldingAComma(t *testing.T) {
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
