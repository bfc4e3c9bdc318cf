package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchRefusesAMultipleChoiceNamingAnOptionTwice: "1, 1" or "1, Pay
// invoice A" names one option twice. The watch signed the list as typed,
// ["Pay invoice A","Pay invoice A"], and the agent got the option twice —
// read by a tool that acts once per pick, twice the payment the approver
// saw as one. A choice that repeats an option is refused; nothing is signed.
func TestWatchRefusesAMultipleChoiceNamingAnOptionTwice(t *testing.T) {
	for _, typed := range []string{"1, 1", "1, Pay invoice A"} {
		t.Run(typed, func(t *testing.T) {
			w := newApprovalWorld(t)
			out := w.submit(t, "ask", `{"prompt":"Pay?","questions":[{"id":"q","text":"Which invoices","type":"multi","options":["Pay invoice A","Pay invoice B"]}]}`, "")
			so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n"+typed+"\n\n"), "--key", w.key("lead"))
			req, err := w.k.Approval(out.ApprovalRequestID)
			if err != nil {
				t.Fatal(err)
			}
			if req.Status != approval.StatusPending || len(req.Votes) != 0 || !strings.Contains(so, "more than once") {
				rec, _ := w.k.Call(out.RequestID)
				t.Fatalf("typed %q: request %s with %d votes, the call got %s\n%s\n%s", typed, req.Status, len(req.Votes), outputOf(rec), so, se)
			}
		})
	}
}
