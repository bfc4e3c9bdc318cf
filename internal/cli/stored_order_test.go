package cli_test

import (
	"strings"
	"testing"

	"github.com/chiokernel/chio/internal/textdir"
)

// TestApprovalViewsNoteRightToLeftText: a terminal that applies the
// Unicode Bidirectional Algorithm draws the argument "שלום 1234 5678" as
// "5678 1234 םולש" (digits after a Hebrew letter take its direction), with
// no control character at all. The terminal views keep the bytes (there is
// no markup to force an order) and say, next to each value that holds
// right-to-left text, that it is shown in stored order; a private-use
// character is escaped. The JSON output is the request, without the note.
func TestApprovalViewsNoteRightToLeftText(t *testing.T) {
	w := newApprovalWorld(t)
	out := w.submit(t, "issue_refund", `{"customer_id":"שלום 1234 5678","amount":450000,"currency":"USD","tag":"x`+"\ue000"+`y"}`,
		`{"purpose":"העברה 4321 8765","max_amount":{"units":450000,"currency":"USD"}}`)
	if out.ApprovalRequestID == "" {
		t.Fatalf("not parked: %+v", out)
	}
	note := "[" + textdir.StoredOrderNote + "]"
	so, se, code := w.run(adminEnv(), "approval", "show", out.ApprovalRequestID)
	if code != 0 {
		t.Fatalf("show: exit %d %s", code, se)
	}
	for _, want := range []string{`"customer_id":"שלום 1234 5678"`, `"tag":"x\ue000y"`} {
		if !strings.Contains(so, want) {
			t.Errorf("`chio approval show` does not show %s:\n%s", want, so)
		}
	}
	for _, line := range strings.Split(so, "\n") {
		if textdir.HasRTL(line) && !strings.HasSuffix(line, note) {
			t.Errorf("`chio approval show` prints right-to-left text without %s: %q", note, line)
		}
	}
	so, _, _ = w.run(adminEnv(), "approval", "list")
	if !strings.Contains(so, out.ApprovalRequestID) || !strings.Contains(so, note) {
		t.Errorf("`chio approval list` prints the Hebrew summary without %s:\n%s", note, so)
	}
	wo, _, _ := w.watch(t, adminEnv(), strings.NewReader("s\n"), "--key", w.key("lead"))
	for _, line := range strings.Split(wo, "\n") {
		if textdir.HasRTL(line) && !strings.Contains(line, note) {
			t.Errorf("`chio approval watch` prints right-to-left text without %s: %q", note, line)
		}
	}
	_, se, _ = w.run(adminEnv(), "approval", "approve", out.ApprovalRequestID, "--key", w.key("lead"))
	if !strings.Contains(se, "העברה 4321 8765  "+note) {
		t.Errorf("`chio approval approve` prints the summary without %s: %s", note, se)
	}
	so, _, _ = w.run(adminEnv(), "approval", "show", out.ApprovalRequestID, "--output", "json")
	if strings.Contains(so, textdir.StoredOrderNote) {
		t.Errorf("the JSON output holds the note: %s", so)
	}
}
