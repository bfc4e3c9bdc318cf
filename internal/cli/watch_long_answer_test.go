package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
)

// TestWatchAsksAgainForAnAnswerLongerThanTheKernelTakes: an answer is at
// most approval.MaxAnswerText bytes. The watch signed and posted a longer
// one, the kernel refused the token, and the request was dropped from the
// watch (never asked again) though the approver had meant to answer it.
// Too long an answer is refused at the prompt, like too long a note, and
// asked again; nothing is signed until it fits.
func TestWatchAsksAgainForAnAnswerLongerThanTheKernelTakes(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "ask", `{"prompt":"Why?","questions":[{"id":"q","text":"Reason","type":"text"}]}`, "")
	// A second request takes whatever input the first leaves over, so the
	// watch ends either way.
	w.submit(t, "confirm", `{"prompt":"Ship the release?"}`, "")
	long := strings.Repeat("x", approval.MaxAnswerText+1)
	so, se, _ := w.watch(t, adminEnv(), strings.NewReader("a\n"+long+"\nshort reason\n\n"), "--key", w.key("lead"))
	rec, _ := w.k.Call(out.RequestID)
	if rec == nil || !strings.Contains(string(rec.Output), `"q":"short reason"`) || !strings.Contains(so, "at most 4000 bytes") {
		req, _ := w.k.Approval(out.ApprovalRequestID)
		t.Fatalf("request %s, the call got %s\n%s\n%s", req.Status, outputOf(rec), strings.ReplaceAll(so, long, "<long>"), se)
	}
}
