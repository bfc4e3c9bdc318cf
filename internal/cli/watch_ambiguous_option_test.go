package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchRefusesAnAnswerThatIsOneOptionsNumberAndAnothersText: options
// are numbered and picked "by number or by text", and the agent writes the
// options. With options ["2","1"] the prompt shows "1) 2  2) 1": a typed
// "1" is option 1 by number and option 2 by text. The watch took the text
// (and, in a comma list, the number), so an approver who typed the number
// shown signed the other option. An answer that reads two ways picks
// neither: it is refused and nothing is signed.
func TestWatchRefusesAnAnswerThatIsOneOptionsNumberAndAnothersText(t *testing.T) {
	for _, typ := range []string{"single", "multi"} {
		t.Run(typ, func(t *testing.T) {
			w := newApprovalWorld(t)
			out := w.submit(t, "ask", `{"prompt":"Ship?","questions":[{"id":"q","text":"How many pallets","type":"`+typ+`","options":["2","1"]}]}`, "")
			so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n1\n\n"), "--key", w.key("lead"))
			req, err := w.k.Approval(out.ApprovalRequestID)
			if err != nil {
				t.Fatal(err)
			}
			if req.Status != approval.StatusPending || len(req.Votes) != 0 || !strings.Contains(so, "ambiguous") {
				rec, _ := w.k.Call(out.RequestID)
				t.Fatalf("typed 1 under \"1) 2  2) 1\": request %s with %d votes, the call got %s\n%s\n%s",
					req.Status, len(req.Votes), outputOf(rec), so, se)
			}
		})
	}
}
